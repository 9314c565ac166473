"""How the commands that work through a running server reach it (``export``,
``import``, ``users erase``, ``changes tail``, ``mcp``, ``health``): the same
``--target`` (or ``$MNEMO_TARGET``), ``--token`` (or ``$MNEMO_TOKEN``),
``--ca-file`` (or ``$MNEMO_CA_FILE``) and ``--timeout`` (or ``$MNEMO_TIMEOUT``) flags, one Python client (``mnemo.client.MnemoClient``), and
the same exit codes: 0 done; 1 the server refused or failed (its error,
reason and field violations on stderr, with what to do next when the server
cannot be reached or wants a token); 2 bad usage or a file that cannot be
read or written; 3 the user has no data (nothing exported or erased: a
mistyped user id, most often).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from mnemo.client import (
    DEFAULT_TARGET,
    MnemoClient,
    MnemoError,
    UnauthenticatedError,
    UnavailableError,
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NO_DATA = 0, 1, 2, 3
TOKEN_ENV = "MNEMO_TOKEN"
TARGET_ENV = "MNEMO_TARGET"
CA_FILE_ENV = "MNEMO_CA_FILE"
TIMEOUT_ENV = "MNEMO_TIMEOUT"


class FileProblem(Exception):
    """A file that cannot be read or written, a line that is no record, or
    another problem of the command line (exit 2)."""


def action_parser(
    commands: Any, command: str, about: str, action: str, help: str, description: str
) -> argparse.ArgumentParser:
    """The parser of ``mnemo COMMAND ACTION`` (``COMMAND`` takes one of its
    actions; ``about`` says what they act on); ``args.action`` names it."""
    group = commands.add_parser(
        command,
        help=f"{about} (through a running server): {action}",
        description=f"Commands on {about}, through a running server.",
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    parser: argparse.ArgumentParser = actions.add_parser(action, help=help, description=description)
    return parser


def connection_arguments(
    parser: argparse.ArgumentParser, timeout: float, timeout_help: str
) -> None:
    """``--target``, ``--token``, ``--ca-file`` and ``--timeout`` (default ``timeout``)."""
    target_argument(parser)
    parser.add_argument(
        "--token",
        default=None,
        help=f"a bearer token (JWT) for --auth jwt servers; default: ${TOKEN_ENV}",
    )
    ca_file_argument(parser)
    timeout_argument(parser, timeout, timeout_help)


def timeout_argument(parser: argparse.ArgumentParser, timeout: float, timeout_help: str) -> None:
    """``--timeout`` (``timeout_of`` resolves it; ``timeout`` is the command's default)."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"{timeout_help} (default: ${TIMEOUT_ENV}, else {timeout:g})",
    )
    parser.set_defaults(default_timeout=timeout)


def timeout_of(args: argparse.Namespace, env: Mapping[str, str]) -> float:
    """``--timeout``, else ``$MNEMO_TIMEOUT``, else the command's default;
    set on ``args``. Raises ``FileProblem`` (exit 2) for a value that is not
    a number of seconds."""
    if args.timeout is None:
        given = env.get(TIMEOUT_ENV)
        try:
            args.timeout = float(given) if given else float(args.default_timeout)
        except ValueError:
            raise FileProblem(
                f"${TIMEOUT_ENV} must be a number of seconds (got {given!r})"
            ) from None
    timeout: float = args.timeout
    return timeout


def target_argument(parser: argparse.ArgumentParser) -> None:
    """``--target`` (``target_of`` resolves it)."""
    parser.add_argument(
        "--target",
        default=None,
        metavar="HOST:PORT",
        help=f"the server's address (default: ${TARGET_ENV}, else {DEFAULT_TARGET})",
    )


def ca_file_argument(parser: argparse.ArgumentParser) -> None:
    """``--ca-file`` (``ca_file_of`` resolves it)."""
    parser.add_argument(
        "--ca-file",
        default=None,
        help=f"use TLS, trusting the CA certificates in this PEM file (default: ${CA_FILE_ENV})",
    )


def ca_file_of(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """``--ca-file``, else ``$MNEMO_CA_FILE``, else none (plaintext)."""
    found: str | None = args.ca_file or env.get(CA_FILE_ENV) or None
    return found


def target_of(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """``--target``, else ``$MNEMO_TARGET``, else the default; set on ``args``."""
    target: str = args.target or env.get(TARGET_ENV) or DEFAULT_TARGET
    args.target = target
    return target


def next_step(error: MnemoError, target: str) -> str:
    """What to do about ``error`` of a call to ``target``, when it is not
    the request itself (empty otherwise)."""
    if isinstance(error, UnavailableError):
        return (
            f"cannot reach a Mnemo server at {target}: is `mnemo serve` running there? "
            f"Give its address with --target or ${TARGET_ENV}"
        )
    if isinstance(error, UnauthenticatedError):
        return f"the server at {target} wants a token: give one with --token or ${TOKEN_ENV}"
    return ""


def channel_credentials(ca_file: str | None) -> grpc.ChannelCredentials | None:
    """TLS credentials trusting the CA certificates of ``--ca-file``; ``None``
    (plaintext) without one. Raises ``FileProblem``."""
    if not ca_file:
        return None
    try:
        roots = Path(ca_file).read_bytes()
    except OSError as error:
        raise FileProblem(f"cannot read {ca_file}: {error}") from None
    return grpc.ssl_channel_credentials(root_certificates=roots)


def connect(args: argparse.Namespace, env: Mapping[str, str]) -> MnemoClient:
    """The client of the connection flags. Raises ``FileProblem``."""
    credentials = channel_credentials(ca_file_of(args, env))
    token = args.token if args.token is not None else env.get(TOKEN_ENV)
    # A record is as large as the request that wrote it, plus names and times:
    # take any size the server sends (the server bounds what it receives).
    options = (("grpc.max_receive_message_length", -1),)
    target = target_of(args, env)
    timeout_of(args, env)
    return MnemoClient(target, credentials=credentials, token=token or None, options=options)


def run_with_client(
    args: argparse.Namespace,
    env: Mapping[str, str],
    command: Callable[[MnemoClient, argparse.Namespace], int],
) -> int:
    """``command(client, args)`` with the exit codes of the module doc."""
    try:
        client = connect(args, env)
    except FileProblem as problem:
        print(f"mnemo: {problem}", file=sys.stderr)
        return EXIT_USAGE
    with client:
        try:
            return command(client, args)
        except FileProblem as problem:
            print(f"mnemo: {problem}", file=sys.stderr)
            return EXIT_USAGE
        except MnemoError as error:
            print(f"mnemo: {error}", file=sys.stderr)
            if hint := next_step(error, args.target):
                print(f"mnemo: {hint}", file=sys.stderr)
            return EXIT_FAILURE
