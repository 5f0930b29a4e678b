"""Coding agents: registering memstore's MCP server and hooks in their settings, and the `agents` commands."""
