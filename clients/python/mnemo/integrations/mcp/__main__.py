"""``python -m mnemo.integrations.mcp``: the MCP command, as ``mnemo-mcp``
(``mnemo.integrations.mcp_command``)."""

from mnemo.integrations.mcp_command import main

if __name__ == "__main__":
    raise SystemExit(main())
