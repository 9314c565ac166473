"""Read a user's rows straight from the database (not through the server).

``user_digest`` hashes, per table of ``schema.metadata`` that has a
``user_id`` column (so a table added later is covered), every row of one
user: equal digests before and after mean nothing of that user changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, MetaData, Table, create_engine, select
from sqlalchemy.pool import NullPool

from mnemo_server.store import schema


def user_tables() -> list[Table]:
    """Every table with a ``user_id`` column."""
    return [table for table in schema.metadata.sorted_tables if "user_id" in table.c]


@contextmanager
def connected(database_url: str) -> Iterator[Connection]:
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def user_digest(
    database_url: str, user_id: str, tables: Collection[str] | None = None
) -> dict[str, tuple[int, str]]:
    """Per table (of ``tables`` only, if given): the number of the user's rows
    and a SHA-256 of their contents."""
    result: dict[str, tuple[int, str]] = {}
    names = [t.name for t in user_tables() if tables is None or t.name in tables]
    with connected(database_url) as conn:
        # In the columns the database has (one migrated to an earlier revision
        # too), reflected in one pass: table by table, PostgreSQL's catalog
        # reads made a digest take about half a second.
        database = MetaData()
        database.reflect(conn, only=names)
        for name in names:
            table = database.tables[name]
            rows = conn.execute(select(table).where(table.c.user_id == user_id)).all()
            lines = sorted(repr(tuple(row)) for row in rows)
            digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
            result[table.name] = (len(rows), digest)
    return result


def tenant_of(database_url: str, user_id: str) -> str | None:
    """The tenant of the user's row; ``None`` if there is no such user."""
    users = schema.users
    with connected(database_url) as conn:
        tenant: str | None = conn.execute(
            select(users.c.tenant_id).where(users.c.user_id == user_id)
        ).scalar_one_or_none()
    return tenant
