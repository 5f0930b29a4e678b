"""What every shell shares: the daemon client and protocol, the lean fast path, the MCP tool answers, hook answers, rendering."""
