"""The few statements that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """``INSERT ... ON CONFLICT DO NOTHING`` for the connection's dialect: a
    row whose key exists is skipped (on PostgreSQL after waiting for a
    concurrent inserter of that key to finish) instead of failing."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()
