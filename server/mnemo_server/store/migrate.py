"""Schema migrations (Alembic), configured in code.

The Alembic configuration is built here, with ``script_location`` pointing at
the ``mnemo_server.migrations`` package, so migrations run from an installed
package without an ``alembic.ini`` in the working directory. These functions
are synchronous (they connect with a sync engine); call them before the event
loop starts or through ``asyncio.to_thread``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from mnemo_server.store.engines import migration_engine

__all__ = [
    "SchemaOutdated",
    "alembic_config",
    "check_schema",
    "current_revision",
    "head_revision",
    "upgrade",
]

SCRIPT_LOCATION = "mnemo_server:migrations"


class SchemaOutdated(Exception):
    """The database schema is not the one this server needs. ``message`` says
    what to run."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def alembic_config(url: str | None = None) -> Config:
    """An Alembic ``Config`` for Mnemo's migrations (and ``url``, if given)."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if url is not None:
        # Through attributes, not the ini options: a URL may contain '%'.
        config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` to ``revision`` (creating it if it is a
    new SQLite file). Safe to run when already there."""
    command.upgrade(alembic_config(url), revision)


def head_revision() -> str:
    """The newest revision this server knows."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found in mnemo_server.migrations")
    return head


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at; None if never migrated."""
    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def migrate_command(url: str) -> str:
    """The command that migrates ``url``, password masked."""
    masked = make_url(url).render_as_string(hide_password=True)
    return f"mnemo migrate --database-url {masked}"


def check_schema(url: str) -> None:
    """Raise ``SchemaOutdated`` unless the database is at ``head_revision()``.

    The message names the command that fixes it (``mnemo migrate ...``), or,
    if the database is newer than this server, says to upgrade the server.
    """
    current, head = current_revision(url), head_revision()
    if current == head:
        return
    script = ScriptDirectory.from_config(alembic_config())
    known = current is None or any(rev.revision == current for rev in script.walk_revisions())
    if not known:
        raise SchemaOutdated(
            f"the database schema is at revision {current}, which this server does not "
            f"know (its newest is {head}): the database was migrated by a newer Mnemo; "
            "run that version of the server"
        )
    where = "empty (never migrated)" if current is None else f"at revision {current}"
    raise SchemaOutdated(
        f"the database schema is {where}, this server needs revision {head}: "
        f"run `{migrate_command(url)}`"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Developer entry point: ``python -m mnemo_server.store.migrate``
    ``upgrade URL`` | ``current URL`` | ``revision -m MESSAGE URL``
    (autogenerates a revision against a database at head; review it by hand)."""
    parser = argparse.ArgumentParser(prog="python -m mnemo_server.store.migrate")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("upgrade").add_argument("url")
    sub.add_parser("current").add_argument("url")
    revision = sub.add_parser("revision")
    revision.add_argument("-m", "--message", required=True)
    revision.add_argument("url")
    args = parser.parse_args(argv)
    if args.action == "upgrade":
        upgrade(args.url)
    elif args.action == "current":
        print(current_revision(args.url) or "(none)")
    else:
        command.revision(alembic_config(args.url), message=args.message, autogenerate=True)


if __name__ == "__main__":
    main(sys.argv[1:])
