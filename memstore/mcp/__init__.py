"""The MCP server over stdio: the tools, the JSON-RPC line reader, the process that serves one agent."""
