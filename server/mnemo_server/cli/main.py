"""The ``mnemo`` command: ``serve``, ``migrate``, ``version``,
``embeddings`` (the background embedder's progress: ``embeddings``), ``health``
(a server's health check: ``health``); through a
running server, ``export`` / ``import`` of a user's data (``user_data``),
``users erase`` (``users``) and ``changes tail`` (``changes``); and ``mcp``,
an MCP server of a user's memory (``mcp_server``).

Every ``serve`` flag has a ``MNEMO_*`` environment variable (named in
``--help``); a flag wins over the environment, the environment over the
default (``mnemo_server.config``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence

from mnemo_server import __version__
from mnemo_server.cli import changes, embeddings, health, mcp_server, user_data, users
from mnemo_server.config import OPTIONS, ConfigError, Settings, add_arguments, resolve

EXIT_USAGE = 2

_EPILOG = "environment variables:\n" + "\n".join(
    f"  {option.env:<31} {option.flag}" for option in OPTIONS
)


class _CommandParser(argparse.ArgumentParser):
    """The parser of a subcommand: an argument it does not know is its error,
    shown with its usage (argparse leaves it to the top-level parser, whose
    usage says nothing of the subcommand's flags)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Mnemo, the gRPC memory service for AI assistants."
    )
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )
    serve = commands.add_parser(
        "serve",
        help="run the gRPC server",
        description="Run the gRPC server until SIGTERM/SIGINT. Each flag can also be set "
        "with its environment variable; a flag wins over the environment.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(serve)
    migrate = commands.add_parser(
        "migrate",
        help="upgrade the database schema to this version's",
        description="Upgrade the database schema (Alembic) to the newest revision this "
        "server knows. Needed once per upgrade for PostgreSQL; the SQLite default migrates "
        "itself at start. Unlike serve, it also adds Mnemo's tables to a database that "
        "holds another application's tables.",
    )
    add_arguments(migrate, only=("database_url", "data_dir", "database_wait_seconds"))
    migrate.add_argument(
        "--distribute",
        action="store_true",
        help="then shard the tables by user over Citus (PostgreSQL with the citus extension, "
        "run on the coordinator): users and every per-user table distributed by user_id, "
        "co-located; app_states, embedding_models, user_erasures reference tables. Does "
        "nothing to tables already distributed; run it after every upgrade",
    )
    commands.add_parser("version", help="print the version")
    embeddings.add_command(commands)
    health.add_command(commands)
    user_data.add_commands(commands)
    users.add_command(commands)
    changes.add_command(commands)
    mcp_server.add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the command; returns the exit code (the console script exits with it)."""
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"mnemo {__version__}")
        return 0
    if args.command in user_data.COMMANDS:
        return user_data.run(args, os.environ if env is None else env)
    if args.command == users.COMMAND:
        return users.run(args, os.environ if env is None else env)
    if args.command == changes.COMMAND:
        return changes.run(args, os.environ if env is None else env)
    if args.command == mcp_server.COMMAND:
        return mcp_server.run(args, os.environ if env is None else env)
    if args.command == health.COMMAND:
        return health.run(args, os.environ if env is None else env)
    try:
        settings = resolve(vars(args), os.environ if env is None else env)
    except ConfigError as error:
        print(f"mnemo: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "migrate":
        return _migrate(settings, distribute=args.distribute)
    if args.command == embeddings.COMMAND:
        return embeddings.run(args, settings)
    from mnemo_server.lifecycle import run

    return run(settings)


def _migrate(settings: Settings, *, distribute: bool = False) -> int:
    from mnemo_server.cli.database import DATABASE_PROBLEMS, refused
    from mnemo_server.lifecycle import EXIT_USAGE
    from mnemo_server.store import distribute as citus
    from mnemo_server.store import migrate
    from mnemo_server.store.engine.engines import describe_url
    from mnemo_server.store.engine.reachable import wait_for_database

    url = settings.effective_database_url
    try:
        # Orchestrators start the migration with the database, as the server.
        asyncio.run(wait_for_database(url, settings.database_wait_seconds, _say))
        if distribute:  # refused before anything changes
            citus.check_distributable(url)
        # Explicit: a database holding another application's tables gets
        # Mnemo's beside them (``serve`` refuses such a database).
        found = migrate.prepare(url, upgrade_schema=True, adopt_foreign=True)
    except citus.NotDistributable as error:
        print(f"mnemo: {error.message}", file=sys.stderr)
        return EXIT_USAGE
    except DATABASE_PROBLEMS as error:
        return refused(url, error)
    if found.foreign:
        print(
            f"mnemo: added Mnemo's tables to {describe_url(url)} beside its "
            f"{len(found.tables)} other tables"
        )
    print(f"mnemo: {describe_url(url)} is at revision {migrate.head_revision()}")
    return _distribute(url) if distribute else 0


def _say(line: str) -> None:
    print(f"mnemo: {line}", file=sys.stderr, flush=True)


def _distribute(url: str) -> int:
    """``mnemo migrate --distribute``'s second step (``store.distribute``)."""
    from sqlalchemy.exc import SQLAlchemyError

    from mnemo_server.lifecycle import EXIT_FAILURE, database_problem
    from mnemo_server.store import distribute as citus
    from mnemo_server.store.engine.engines import describe_url

    try:
        done = citus.distribute(url)
    except citus.NotDistributable as error:
        print(f"mnemo: {error.message}", file=sys.stderr)
        return EXIT_FAILURE
    except SQLAlchemyError as error:
        print(f"mnemo: {database_problem(url, error)}", file=sys.stderr)
        return EXIT_FAILURE
    if not done.changed:
        print(f"mnemo: {describe_url(url)} is already distributed (Citus {done.citus_version})")
        return 0
    if done.reference:
        print(f"mnemo: reference tables now: {', '.join(done.reference)}")
    if done.distributed:
        print(f"mnemo: distributed by user_id now: {', '.join(done.distributed)}")
    print(f"mnemo: {describe_url(url)} is distributed (Citus {done.citus_version})")
    return 0
