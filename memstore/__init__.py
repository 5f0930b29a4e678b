"""memstore: local-first memory for coding agents, kept as markdown files in git."""

__version__ = "0.1.0"
