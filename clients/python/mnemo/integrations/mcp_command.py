"""The MCP command: serve Mnemo's memory tools to an MCP client (a desktop
assistant, an IDE agent, an agent framework) for one user, through a running
Mnemo server. ``pip install 'mnemo-client[mcp]'`` installs it as
``mnemo-mcp`` (also ``python -m mnemo.integrations.mcp``); the server is
``mnemo.integrations.mcp``, this is its command line (docs/integrations/mcp.md).

It lives outside the ``mnemo.integrations.mcp`` package, which imports the
MCP SDK, so that without the extra it can still say, in one line, what to
install.

The user: ``--user`` (a server with ``--auth none``; with an admin token, a
user of the token's tenant), else the ``sub`` of the token (``--token``,
``$MNEMO_TOKEN`` or ``--token-file``, re-read before every call so a
refreshed token is picked up).

Transports: ``--transport stdio`` (the default: the MCP client launches this
command and speaks on its stdin/stdout) or ``--transport http`` (streamable
HTTP at ``http://LISTEN/mcp``; loopback only unless
``--allow-non-loopback``, and every request must carry the bearer token of
``--http-token-file`` (``mnemo.integrations.mcp.http_token``), since whoever
it serves acts as the user). One line on stderr says where it serves (over
HTTP, with the header to send). Exit codes: 0 stopped (stdin closed, SIGINT
or SIGTERM); 2 bad usage (no user, an unreadable token or CA file, an HTTP
token file others may read or that is not a regular file, a non-loopback
address, the extra not installed: one line naming the flag and the fix) or
an address that cannot be bound (taken: one line saying so and how to
choose another).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import grpc

from mnemo.client import DEFAULT_TARGET, DEFAULT_TIMEOUT

PROG = "mnemo-mcp"
EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_LISTEN = "127.0.0.1:8765"
TOKEN_ENV = "MNEMO_TOKEN"
TARGET_ENV = "MNEMO_TARGET"
CA_FILE_ENV = "MNEMO_CA_FILE"
TIMEOUT_ENV = "MNEMO_TIMEOUT"
DESCRIPTION = (
    "Serve the MCP tools memory_save, memory_recall, memory_list, memory_update, "
    "memory_delete, memory_context, working_memory_get and working_memory_remember for one "
    "user, calling a running Mnemo server. See docs/integrations/mcp.md."
)


class UsageProblem(Exception):
    """Flags that cannot be served as given (exit 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags, on ``parser`` (``mnemo-mcp``'s own, or a subcommand's)."""
    parser.add_argument(
        "--target",
        default=None,
        metavar="HOST:PORT",
        help=f"the Mnemo server's address (default: ${TARGET_ENV}, else {DEFAULT_TARGET})",
    )
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
    parser.add_argument(
        "--ca-file",
        default=None,
        help=f"use TLS, trusting the CA certificates in this PEM file (default: ${CA_FILE_ENV})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"deadline of each call to Mnemo (default: ${TIMEOUT_ENV}, else {DEFAULT_TIMEOUT:g})",
    )
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


def run(args: argparse.Namespace, env: Mapping[str, str], prog: str = PROG) -> int:
    """Serve as ``args`` say until stopped; the exit code. Problems are one
    line on stderr, prefixed ``prog:``."""
    try:
        from mnemo.integrations import mcp as integration
        from mnemo.integrations.mcp import http_token
    except ImportError as error:
        command = "mnemo mcp" if prog == "mnemo" else prog
        print(
            f"{prog}: {command} needs the MCP SDK: pip install 'mnemo-client[mcp]' "
            f"(or make venv in a clone) ({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        token, first_token = _token(args, env, integration.token_file_reader)
        identity = integration.resolve_identity(args.user, first_token, args.conversation)
        credentials = _credentials(args.ca_file or env.get(CA_FILE_ENV) or None)
        timeout = _timeout(args, env)
        host, port = _address(args) if args.transport == "http" else ("", 0)
        token_file = _http_token_file(args, env, http_token.default_token_file)
        http_secret = http_token.load_or_create(token_file) if args.transport == "http" else ""
    except (UsageProblem, http_token.TokenFileProblem, integration.IdentityError) as problem:
        print(f"{prog}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    target = args.target or env.get(TARGET_ENV) or DEFAULT_TARGET
    server = integration.build_server(
        target, identity, token=token, credentials=credentials, timeout=timeout
    )
    who = f"users/{identity.user}" + (
        f"/conversations/{identity.conversation}" if identity.conversation else ""
    )

    def listening(where: str) -> None:
        line = f"{prog}: serving MCP on {where} for {who} (Mnemo at {target})"
        if args.transport == "http":
            line += f"; send 'Authorization: Bearer {http_secret}' (the token is in {token_file})"
        print(line, file=sys.stderr)

    try:
        if args.transport == "stdio":
            listening("stdio")
            asyncio.run(integration.serve_stdio(server))
        else:
            serving = integration.serve_http(
                server, host, port, bearer_token=http_secret, on_listening=listening
            )
            asyncio.run(serving)
    except KeyboardInterrupt:
        return EXIT_OK
    except OSError as error:
        print(f"{prog}: {_cannot_listen(args.listen, error)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``mnemo-mcp``."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """``mnemo-mcp``: parse ``argv`` (default: the process's) and run."""
    args = build_parser().parse_args(argv)
    return run(args, os.environ if env is None else env)


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


def _credentials(ca_file: str | None) -> grpc.ChannelCredentials | None:
    """TLS trusting the CA certificates of ``ca_file``; ``None`` (plaintext) without one."""
    if not ca_file:
        return None
    try:
        roots = Path(ca_file).read_bytes()
    except OSError as error:
        raise UsageProblem(
            f"cannot read --ca-file {ca_file}: {error.strerror}; name the PEM file of the CA "
            "certificates to trust"
        ) from None
    return grpc.ssl_channel_credentials(root_certificates=roots)


def _timeout(args: argparse.Namespace, env: Mapping[str, str]) -> float:
    """``--timeout``, else ``$MNEMO_TIMEOUT``, else the client's default."""
    if args.timeout is not None:
        return float(args.timeout)
    given = env.get(TIMEOUT_ENV)
    try:
        return float(given) if given else DEFAULT_TIMEOUT
    except ValueError:
        raise UsageProblem(f"${TIMEOUT_ENV} must be a number of seconds (got {given!r})") from None


def _http_token_file(
    args: argparse.Namespace, env: Mapping[str, str], default: Callable[[Mapping[str, str]], Path]
) -> Path:
    if args.http_token_file is not None and args.transport != "http":
        raise UsageProblem("--http-token-file goes with --transport http")
    return Path(args.http_token_file) if args.http_token_file else default(env)


def _address(args: argparse.Namespace) -> tuple[str, int]:
    """``--listen`` as (host, port), refused when it is not loopback unless allowed."""
    listen: str = args.listen
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise UsageProblem(f"--listen {listen!r} is not HOST:PORT")
    host = host.removeprefix("[").removesuffix("]")
    if not _is_loopback(host) and not args.allow_non_loopback:
        raise UsageProblem(
            f"refusing --listen {listen}, which is not a loopback address: whoever reaches the "
            "MCP endpoint acts as the user; use 127.0.0.1, or add --allow-non-loopback behind "
            "a proxy that authenticates"
        )
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cannot_listen(listen: str, error: OSError) -> str:
    """One line: why ``--listen`` cannot be bound, and how to choose another."""
    choose = "choose another with --listen HOST:PORT"
    if error.errno == errno.EADDRINUSE:
        port = listen.rpartition(":")[2]
        return (
            f"cannot listen on {listen}: the address is in use (another process listens on "
            f"port {port}): stop it or {choose}"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {listen}: not an address of this machine: {choose}"
    if error.errno == errno.EACCES:
        return (
            f"cannot listen on {listen}: permission denied (ports below 1024 need privileges): "
            f"{choose}"
        )
    return f"cannot listen on {listen}: {error.strerror or error}: {choose}"
