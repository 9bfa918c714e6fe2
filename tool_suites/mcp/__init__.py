"""The mcp suite: any MCP server's tools as a topology (see mcp_suite.py and docs/suites-mcp.md)."""
