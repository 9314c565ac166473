"""Schema migrations (Alembic), configured in code.

The Alembic configuration is built here, with ``script_location`` pointing at
the ``mnemo_server.store.migrations`` package, so migrations run from an installed
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

from mnemo_server.store.engine import preflight
from mnemo_server.store.engine.engines import describe_url, migration_engine

__all__ = [
    "NotMnemoDatabase",
    "SchemaOutdated",
    "alembic_config",
    "check_schema",
    "current_revision",
    "downgrade",
    "head_revision",
    "prepare",
    "upgrade",
]

SCRIPT_LOCATION = "mnemo_server.store:migrations"


class SchemaOutdated(Exception):
    """The database schema is not the one this server needs. ``message`` says
    what to run."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotMnemoDatabase(SchemaOutdated):
    """The database holds tables but no Mnemo schema (another application's)."""


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


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``"-1"``: one step).

    Every revision has a downgrade; what one gives back is in its docstring.
    """
    command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    """The newest revision this server knows."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found in mnemo_server.store.migrations")
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


def prepare(url: str, *, upgrade_schema: bool, adopt_foreign: bool = False) -> preflight.Found:
    """What the server does with the database at ``url`` before opening it:
    examine it (``store.engine.preflight``), then upgrade the schema to head
    (``upgrade_schema``) or check that it is there. Returns what was found.

    Raises ``preflight.DatabaseUnusable`` (not a database, damaged,
    unreadable), ``NotMnemoDatabase`` (tables but no Mnemo schema, unless
    ``adopt_foreign``: the operator's explicit ``mnemo migrate`` then adds
    Mnemo's tables beside them), ``SchemaOutdated`` (a revision this server
    does not know; without ``upgrade_schema`` also a schema not at head), or
    ``SQLAlchemyError`` (the database cannot be reached).
    """
    found = preflight.examine(url)
    refusal = _refusal(url, found, adopt_foreign=adopt_foreign, at_head=not upgrade_schema)
    if refusal is not None:
        raise refusal
    if upgrade_schema:
        upgrade(url)
    return found


def check_schema(url: str) -> None:
    """Raise ``SchemaOutdated`` unless the database is at ``head_revision()``.

    The message names the command that fixes it (``mnemo migrate ...``), or,
    if the database is newer than this server, says to upgrade the server;
    a database of another application raises ``NotMnemoDatabase``.
    """
    refusal = _refusal(url, preflight.examine(url), adopt_foreign=False, at_head=True)
    if refusal is not None:
        raise refusal


def _refusal(
    url: str, found: preflight.Found, *, adopt_foreign: bool, at_head: bool
) -> SchemaOutdated | None:
    """Why the server must not use ``found`` as it is, if it must not."""
    head = head_revision()
    if found.foreign and not adopt_foreign:
        shown = ", ".join(found.tables[:5]) + (", ..." if len(found.tables) > 5 else "")
        return NotMnemoDatabase(
            f"{describe_url(url)} is not a Mnemo database: it holds {len(found.tables)} "
            f"tables ({shown}) and no Mnemo schema (no {preflight.ALEMBIC_TABLE} table). "
            "Point --database-url or --data-dir at a Mnemo database (or a new file); "
            f"to add Mnemo's tables to this one anyway, run `{migrate_command(url)}`"
        )
    script = ScriptDirectory.from_config(alembic_config())
    known = {rev.revision for rev in script.walk_revisions()}
    unknown = [revision for revision in found.revisions if revision not in known]
    if unknown:
        return SchemaOutdated(
            f"the database schema is at revision {unknown[0]}, which this server does not "
            f"know (its newest is {head}): the database was migrated by a newer Mnemo "
            "(run that version of the server) or by another application's Alembic "
            "migrations (point --database-url elsewhere)"
        )
    if not at_head or found.revisions == (head,):
        return None
    if found.revisions:
        where = f"at revision {found.revisions[0]}"
    elif found.tables:
        where = f"without a revision (beside {len(found.tables)} other tables)"
    else:
        where = "empty (never migrated)"
    return SchemaOutdated(
        f"the database schema is {where}, this server needs revision {head}: "
        f"run `{migrate_command(url)}`"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Developer entry point: ``python -m mnemo_server.store.migrate``
    ``upgrade URL`` | ``downgrade URL REVISION`` | ``current URL`` |
    ``revision -m MESSAGE URL``
    (autogenerates a revision against a database at head; review it by hand)."""
    parser = argparse.ArgumentParser(prog="python -m mnemo_server.store.migrate")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("upgrade").add_argument("url")
    sub.add_parser("current").add_argument("url")
    down = sub.add_parser("downgrade")
    down.add_argument("url")
    down.add_argument("revision", help='a revision, or "-1" for one step')
    revision = sub.add_parser("revision")
    revision.add_argument("-m", "--message", required=True)
    revision.add_argument("url")
    args = parser.parse_args(argv)
    if args.action == "upgrade":
        upgrade(args.url)
    elif args.action == "downgrade":
        downgrade(args.url, args.revision)
    elif args.action == "current":
        print(current_revision(args.url) or "(none)")
    else:
        command.revision(alembic_config(args.url), message=args.message, autogenerate=True)


if __name__ == "__main__":
    main(sys.argv[1:])
