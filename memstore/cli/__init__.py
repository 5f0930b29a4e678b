"""The typer command line: one module per command group."""
