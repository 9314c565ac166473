"""What Alembic's autogenerate comparison leaves out: the objects migrations
create with raw SQL, which the metadata does not describe, and what the
metadata creates only on another dialect."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Integer, column, table
from sqlalchemy.sql.ddl import DDLIf
from sqlalchemy.sql.expression import TableClause

memories_fts: TableClause = table("memories_fts", column("rowid", Integer))
"""SQLite only: the FTS5 table over ``memories.search_document`` (queries only)."""

UNMANAGED_NAMES = frozenset({"memories_fts", "ix_memories_search"})
"""Objects migration 0002 creates with raw SQL, which the metadata does not
describe: SQLite's FTS5 virtual table (and its shadow tables
``memories_fts_*``), and PostgreSQL's GIN expression index (Alembic cannot
compare an index on an expression)."""


def include_object_on(dialect: str) -> Callable[[object, str | None, str, bool, object], bool]:
    """Alembic's ``include_object`` hook for a database of ``dialect``: leave
    out of autogenerate comparisons what the metadata creates only on another
    dialect (``ddl_if(dialect=...)``)."""

    def include(obj: object, _name: str | None, _type: str, reflected: bool, _to: object) -> bool:
        condition: DDLIf | None = getattr(obj, "_ddl_if", None)
        return reflected or condition is None or condition.dialect in (None, dialect)

    return include


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Alembic's ``include_name`` hook: leave ``UNMANAGED_NAMES`` out of
    autogenerate comparisons (the FTS5 tables cannot even be reflected)."""
    if name is None:
        return True
    if type_ == "table" and name.startswith("memories_fts"):
        return False
    return name not in UNMANAGED_NAMES
