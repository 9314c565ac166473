"""The SQL that is spelled differently on SQLite and PostgreSQL.

Each function takes the connection (or its dialect's name) and gives the
spelling of one construct for that backend, so that a statement reads the
same in the module that builds it. What stays outside: statements cached per
dialect (``engine.statements``' ``Statement`` dictionaries, the text index's
SQL), and steps one backend needs and the other has no form of (PostgreSQL's
row locks before an erasure, SQLite's WAL checkpoint or its FTS5 index);
``memories.text_index.one_of`` stays beside the text index, whose writers
import it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    bindparam,
    func,
    literal,
    literal_column,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.dml import Insert
from sqlalchemy.types import TypeEngine

from mnemo_server.store.engine.statements import dialect_of
from mnemo_server.store.transactions.tx import Tx

__all__ = [
    "by_id",
    "bytewise",
    "contains",
    "insert_for",
    "insert_ignoring_conflicts",
    "list_elements",
    "locked_for_update",
]

S = TypeVar("S", bound=Select[Any])


def insert_for(conn: Connection | Tx, table: Table) -> Any:
    """The dialect's own ``INSERT`` (with ``on_conflict_do_update`` and
    ``on_conflict_do_nothing``)."""
    module = postgresql if dialect_of(conn) == "postgresql" else sqlite
    return module.insert(table)


def insert_ignoring_conflicts(conn: Connection, table: Table) -> Insert:
    """``INSERT ... ON CONFLICT DO NOTHING`` for the connection's dialect: a
    row whose key exists is skipped (on PostgreSQL after waiting for a
    concurrent inserter of that key to finish) instead of failing."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def locked_for_update(dialect: str, statement: S) -> S:
    """``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite has no row locks (its
    write transaction holds the database's), so the statement as it is."""
    if dialect == "postgresql":
        return statement.with_for_update()
    return statement


def contains(conn: Connection, column: ColumnElement[str], needle: str) -> ColumnElement[bool]:
    """``needle`` occurs in ``column`` (exact, case-sensitive, no wildcards)."""
    finder = func.instr if dialect_of(conn) == "sqlite" else func.strpos
    found: ColumnElement[bool] = finder(column, literal(needle)) > 0
    return found


def bytewise(dialect: str, column: ColumnElement[Any]) -> ColumnElement[Any]:
    """``column`` (an id) compared and ordered bytewise on every backend, as
    Python orders strings (PostgreSQL would use the database's collation)."""
    return column if dialect == "sqlite" else column.collate("C")


def by_id(conn: Connection, column: ColumnElement[Any]) -> ColumnElement[Any]:
    """``bytewise`` for the connection's dialect."""
    return bytewise(dialect_of(conn), column)


def list_elements(dialect: str, name: str, item_type: TypeEngine[Any]) -> Select[Any]:
    """The elements of the list parameter ``name`` (``statements.list_parameter``:
    a JSON array read with ``json_each`` on SQLite, an array ``unnest`` on
    PostgreSQL), as a subquery of one column (``column.in_(...)``)."""
    if dialect == "sqlite":
        return select(literal_column("value")).select_from(func.json_each(bindparam(name)))
    return select(func.unnest(bindparam(name, type_=ARRAY(item_type))))
