"""What a database holds, looked at before the server migrates or opens it.

``examine(url)`` writes nothing. SQLite: a file that does not exist is new
(nothing to look at); an existing one is opened with the bare driver (no WAL
switch, none of the pragmas ``store.engine.engines`` sets), checked with
``PRAGMA quick_check`` (it reads every page of the file: a damaged page is
found here rather than by the first call that needs it) and its tables are
listed. PostgreSQL: the tables of the connection's default schema. Either
way, the rows of ``alembic_version`` say which revision the schema is at.

A file that is not a SQLite database, is damaged, or cannot be read raises
``DatabaseUnusable``, whose message names the file and what is wrong with it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect, text

from mnemo_server.store.engine.engines import migration_engine, sqlite_file

__all__ = ["ALEMBIC_TABLE", "DatabaseUnusable", "Found", "examine"]

ALEMBIC_TABLE = "alembic_version"
# Problems ``PRAGMA quick_check`` reports at most (it stops there).
_PROBLEMS = 3
_BUSY_TIMEOUT_S = 5.0


class DatabaseUnusable(Exception):
    """The database file cannot be used at all; ``message`` says which file
    and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Found:
    """What ``examine`` found: the tables other than ``alembic_version`` and
    that table's rows (the schema's revisions; Mnemo has a single head)."""

    tables: tuple[str, ...]
    revisions: tuple[str, ...]

    @property
    def foreign(self) -> bool:
        """Tables, but no Alembic revision: another application's database."""
        return bool(self.tables) and not self.revisions


def examine(url: str) -> Found:
    """What the database at ``url`` holds. Raises ``DatabaseUnusable`` (a
    SQLite file that is not a database, is damaged or cannot be read),
    ``ValueError`` (an unusable URL) or ``SQLAlchemyError`` (PostgreSQL
    unreachable)."""
    path = sqlite_file(url)
    if path is not None:
        return _examine_sqlite(path)
    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            names = set(inspect(conn).get_table_names())
            revisions: tuple[str, ...] = ()
            if ALEMBIC_TABLE in names:
                found = conn.execute(text(f"SELECT version_num FROM {ALEMBIC_TABLE}"))
                revisions = tuple(sorted(found.scalars()))
    finally:
        engine.dispose()
    return Found(tuple(sorted(names - {ALEMBIC_TABLE})), revisions)


def _examine_sqlite(path: Path) -> Found:
    if not path.exists():
        return Found((), ())
    try:
        conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as error:
        raise DatabaseUnusable(f"the SQLite database {path} cannot be opened: {error}") from error
    try:
        problems = [row[0] for row in conn.execute(f"PRAGMA quick_check({_PROBLEMS})")]
        if problems != ["ok"]:
            raise DatabaseUnusable(_damaged(path, "PRAGMA quick_check: " + "; ".join(problems)))
        names = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
            )
        }
        revisions: tuple[str, ...] = ()
        if ALEMBIC_TABLE in names:
            found = conn.execute(f"SELECT version_num FROM {ALEMBIC_TABLE}")
            revisions = tuple(sorted(row[0] for row in found))
    except sqlite3.Error as error:
        raise DatabaseUnusable(_unreadable(path, error)) from error
    finally:
        conn.close()
    return Found(tuple(sorted(names - {ALEMBIC_TABLE})), revisions)


def _damaged(path: Path, detail: str) -> str:
    return f"the SQLite database {path} is damaged ({detail}): restore it from a backup"


def _unreadable(path: Path, error: sqlite3.Error) -> str:
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB:
        return (
            f"{path} is not a SQLite database ({error}): point --database-url or --data-dir "
            "at a Mnemo database, or at a path that does not exist yet for a new one"
        )
    if code == sqlite3.SQLITE_CORRUPT:
        return _damaged(path, str(error))
    return f"the SQLite database {path} cannot be read: {error}"
