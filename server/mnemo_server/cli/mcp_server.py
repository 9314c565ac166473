"""``mnemo mcp``: serve Mnemo's memory tools to an MCP client (a desktop
assistant, an IDE agent, an agent framework) for one user, through a running
Mnemo server. The server itself is ``mnemo.integrations.mcp`` (extra
``mnemo-client[mcp]``); this is its command line.

The user: ``--user`` (a server with ``--auth none``; with an admin token, a
user of the token's tenant), else the ``sub`` of the token (``--token``,
``$MNEMO_TOKEN`` or ``--token-file``, re-read before every call so a
refreshed token is picked up).

Transports: ``--transport stdio`` (the default: the MCP client launches this
command and speaks on its stdin/stdout) or ``--transport http`` (streamable
HTTP at ``http://LISTEN/mcp``; loopback only unless
``--allow-non-loopback``, and every request must carry the bearer token of
``--http-token-file`` (``mcp_token``), since whoever it serves acts as the
user). One line on stderr says where it serves (over HTTP, with the header to
send). Exit codes: 0 stopped (stdin closed, SIGINT or SIGTERM); 2 bad usage
(no user, an unreadable token file, an HTTP token file others may read or
that is not a regular file, a non-loopback address, the extra not installed:
one line naming the flag and the fix) or an address that cannot be
bound (taken: one line saying so and how to choose another, as ``serve``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mnemo.client import DEFAULT_TIMEOUT
from mnemo_server.cli.connection import (
    TOKEN_ENV,
    FileProblem,
    ca_file_argument,
    ca_file_of,
    channel_credentials,
    target_argument,
    target_of,
    timeout_argument,
    timeout_of,
)
from mnemo_server.cli.mcp_token import TokenFileProblem, default_token_file, load_or_create
from mnemo_server.config import is_loopback, listen_host
from mnemo_server.listening import cannot_listen

COMMAND = "mcp"
EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_LISTEN = "127.0.0.1:8765"
_MISSING_EXTRA = (
    "mnemo mcp needs the MCP SDK: pip install 'mnemo-client[mcp]' (or make venv in a clone)"
)


class UsageProblem(Exception):
    """Flags that cannot be served as given."""


def add_command(commands: Any) -> None:
    """Add ``mcp`` to the ``mnemo`` subcommands."""
    parser = commands.add_parser(
        COMMAND,
        help="serve Mnemo's memory tools over MCP for one user (through a running server)",
        description="Serve the MCP tools memory_save, memory_recall, memory_list, "
        "memory_update, memory_delete, memory_context, working_memory_get and "
        "working_memory_remember for one user, calling a running Mnemo server. "
        "See docs/integrations/mcp.md.",
    )
    target_argument(parser)
    parser.add_argument(
        "--user", default=None, help="the user the tools act for (default: the token's sub)"
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument(
        "--token", default=None, help=f"a bearer token (JWT) for --auth jwt; default: ${TOKEN_ENV}"
    )
    token.add_argument(
        "--token-file",
        default=None,
        metavar="FILE",
        help="a file holding the token, read again before every call",
    )
    parser.add_argument(
        "--conversation",
        default=None,
        metavar="ID",
        help="the conversation the tools act in: the origin of their writes, the scope of "
        "scope=conversation saves and of working memory (default: none)",
    )
    ca_file_argument(parser)
    timeout_argument(parser, DEFAULT_TIMEOUT, "deadline of each call to Mnemo")
    parser.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="default: stdio"
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"with --transport http: the address (default {DEFAULT_LISTEN}; port 0: any free)",
    )
    parser.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="with --transport http: allow a non-loopback --listen (anyone reaching it with "
        "the token acts as the user)",
    )
    parser.add_argument(
        "--http-token-file",
        default=None,
        metavar="FILE",
        help="with --transport http: the file holding the bearer token every request must "
        "carry, created with a random one (mode 0600) if missing (default "
        "$XDG_CONFIG_HOME/mnemo/mcp-http-token, else ~/.config/mnemo/mcp-http-token)",
    )


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run ``mnemo mcp`` until it is stopped; the exit code."""
    try:
        from mnemo.integrations import mcp as integration
    except ImportError as error:
        print(f"mnemo: {_MISSING_EXTRA} ({error})", file=sys.stderr)
        return EXIT_USAGE
    try:
        token, first_token = _token(args, env, integration.token_file_reader)
        identity = integration.resolve_identity(args.user, first_token, args.conversation)
        credentials = channel_credentials(ca_file_of(args, env))
        timeout_of(args, env)
        host, port = _address(args) if args.transport == "http" else ("", 0)
        token_file = _http_token_file(args, env)
        http_token = load_or_create(token_file) if args.transport == "http" else ""
    except (UsageProblem, FileProblem, TokenFileProblem, integration.IdentityError) as problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return EXIT_USAGE
    server = integration.build_server(
        target_of(args, env), identity, token=token, credentials=credentials, timeout=args.timeout
    )
    who = f"users/{identity.user}" + (
        f"/conversations/{identity.conversation}" if identity.conversation else ""
    )

    def listening(where: str) -> None:
        line = f"mnemo: serving MCP on {where} for {who} (Mnemo at {args.target})"
        if args.transport == "http":
            line += f"; send 'Authorization: Bearer {http_token}' (the token is in {token_file})"
        print(line, file=sys.stderr)

    try:
        if args.transport == "stdio":
            listening("stdio")
            asyncio.run(integration.serve_stdio(server))
        else:
            serving = integration.serve_http(
                server, host, port, bearer_token=http_token, on_listening=listening
            )
            asyncio.run(serving)
    except KeyboardInterrupt:
        return EXIT_OK
    except OSError as error:
        print(f"mnemo: {cannot_listen(args.listen, '--listen', None, error)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _token(
    args: argparse.Namespace,
    env: Mapping[str, str],
    file_reader: Callable[[Path], Callable[[], str]],
) -> tuple[str | Callable[[], str] | None, str | None]:
    """The token source for the client, and the token as it is now."""
    if args.token_file:
        path = Path(args.token_file)
        try:
            current = path.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise UsageProblem(
                f"cannot read --token-file {path}: {error.strerror}; name the file holding "
                "the token"
            ) from None
        except UnicodeDecodeError:
            raise UsageProblem(
                f"--token-file {path} does not hold a token (not UTF-8 text): name the file "
                "holding the token"
            ) from None
        return file_reader(path), current
    token = args.token if args.token is not None else env.get(TOKEN_ENV)
    return token or None, token or None


def _http_token_file(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    if args.http_token_file is not None and args.transport != "http":
        raise UsageProblem("--http-token-file goes with --transport http")
    return Path(args.http_token_file) if args.http_token_file else default_token_file(env)


def _address(args: argparse.Namespace) -> tuple[str, int]:
    listen: str = args.listen
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise UsageProblem(f"--listen {listen!r} is not HOST:PORT")
    if not is_loopback(listen) and not args.allow_non_loopback:
        raise UsageProblem(
            f"refusing --listen {listen}, which is not a loopback address: whoever reaches the "
            "MCP endpoint acts as the user; use 127.0.0.1, or add --allow-non-loopback behind "
            "a proxy that authenticates"
        )
    return listen_host(listen), int(port)
