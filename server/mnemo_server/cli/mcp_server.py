"""``mnemo mcp``: serve Mnemo's memory tools to an MCP client for one user,
through a running Mnemo server. It is the client's MCP command
(``mnemo.integrations.mcp_command``: ``mnemo-mcp`` where ``mnemo-client[mcp]``
is installed alone) as a subcommand of ``mnemo``: the same flags, behaviour
and exit codes (that module's doc), its lines prefixed ``mnemo:``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from mnemo.integrations import mcp_command

COMMAND = "mcp"


def add_command(commands: Any) -> None:
    """Add ``mcp`` to the ``mnemo`` subcommands."""
    parser = commands.add_parser(
        COMMAND,
        help="serve Mnemo's memory tools over MCP for one user (through a running server)",
        description=mcp_command.DESCRIPTION,
    )
    mcp_command.add_arguments(parser)


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo mcp`` until it is stopped; the exit code."""
    return mcp_command.run(args, env, prog="mnemo")
