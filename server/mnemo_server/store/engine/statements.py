"""Statements of the hot paths: built once with SQLAlchemy Core, compiled
once per dialect, executed on the driver connection.

SQLAlchemy Core stays the one way the schema and its queries are written;
what this module skips is the per-call work around them. Measured here (one
SQLite row by key, 20,000 times): a Core statement built per call costs about
110 us, a prebuilt Core statement run through ``Connection.execute`` about
19 us, the same compiled SQL on the sqlite3 connection about 3 us
(``docs/performance.md``). A write runs four to six statements, so the
difference is a large part of what a call costs.

A ``Statement`` uses named parameters on both drivers (``:name`` for sqlite3,
``%(name)s`` for psycopg, as each dialect compiles them). Values bound in the
statement itself (``values(temporary=False)``) are merged under the call's
parameters. Rows come back as named tuples of the selected (or returned)
column names. The column types in ``store.schema`` need no conversion
between Python and either driver (integers, text, bytes), except that
SQLite returns booleans as 0 or 1: converters use ``bool()``.

Driver errors are the driver's own (``sqlite3.Error``, ``psycopg.Error``);
``store.engine.failures.classify`` knows both forms.
"""

from __future__ import annotations

import json
import threading
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Insert, Table, bindparam, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler

from mnemo_server.store.transactions.tx import Tx

__all__ = ["Statement", "dialect_of", "driver_connection", "insert_row"]

_DIALECTS: dict[str, Dialect] = {
    "sqlite": sqlite.dialect(paramstyle="named"),
    "postgresql": PGDialect_psycopg(),  # type: ignore[no-untyped-call]
}

Row = Any
"""A named tuple of a statement's columns."""


class _Compiled:
    __slots__ = ("defaults", "row", "sql")

    def __init__(self, compiled: SQLCompiler, names: Sequence[str]) -> None:
        self.sql = str(compiled)
        binds = compiled.binds
        self.defaults = {k: v for k, v in compiled.params.items() if not binds[k].required}
        self.row: Any = namedtuple("Row", names, rename=True) if names else None


def insert_per_dialect(build: Callable[[Any], Executable]) -> dict[str, Statement]:
    """A statement per dialect name (``[tx.dialect]``) from ``build(insert)``,
    where ``insert`` is the dialect's own (for its ``on_conflict_do_nothing``
    and ``on_conflict_do_update``, which the two spell differently)."""
    return {
        "sqlite": Statement(build(sqlite.insert)),
        "postgresql": Statement(build(postgresql.insert)),
    }


def insert_row(table: Table, *, without: Sequence[str] = ("id",)) -> Insert:
    """``INSERT`` of one row of ``table`` with a parameter per column (named
    as the column), except the columns ``without`` (the surrogate key)."""
    return insert(table).values(
        {c.name: bindparam(c.name) for c in table.columns if c.name not in without}
    )


def dialect_of(conn: Connection | Tx) -> str:
    """``"sqlite"`` or ``"postgresql"``."""
    return conn.dialect if isinstance(conn, Tx) else conn.dialect.name


def driver_connection(conn: Connection | Tx) -> Any:
    """The driver connection under ``conn`` (a ``Tx`` keeps it at hand)."""
    if isinstance(conn, Tx):
        return conn.raw
    return conn.connection.dbapi_connection


def list_parameter(dialect: str, values: Sequence[Any]) -> Any:
    """``values`` as one statement parameter: a JSON array on SQLite (read
    with ``json_each``), a list on PostgreSQL (an array: ``unnest`` or
    ``= ANY``)."""
    if dialect == "sqlite":
        return json.dumps(list(values), ensure_ascii=False)
    return list(values)


class Statement:
    """One statement, compiled on first use for each dialect (thread-safe).

    ``binary``: on PostgreSQL, results come in the binary format (for long
    ``bytea`` results: the text format sends them as hex, which psycopg then
    decodes; 100,000 vectors of 64 values: 380 -> 250 ms)."""

    def __init__(self, statement: Executable, *, binary: bool = False) -> None:
        self._statement = statement
        self._binary = binary
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _for(self, dialect: str) -> _Compiled:
        found = self._compiled.get(dialect)
        if found is None:
            with self._lock:
                compiled = self._statement.compile(dialect=_DIALECTS[dialect])  # type: ignore[attr-defined]
                assert isinstance(compiled, SQLCompiler)
                names = [c[0] for c in compiled._result_columns or ()]
                found = self._compiled[dialect] = _Compiled(compiled, names)
        return found

    def sql(self, dialect: str) -> str:
        """The SQL text for ``dialect`` (``"sqlite"`` or ``"postgresql"``)."""
        return self._for(dialect).sql

    def _run(self, conn: Connection | Tx, params: Mapping[str, Any]) -> tuple[Any, _Compiled]:
        dialect = dialect_of(conn)
        compiled = self._for(dialect)
        values = {**compiled.defaults, **params} if compiled.defaults else params
        if self._binary and dialect == "postgresql":
            return driver_connection(conn).execute(compiled.sql, values, binary=True), compiled
        return driver_connection(conn).execute(compiled.sql, values), compiled

    def execute(self, conn: Connection | Tx, **params: Any) -> int:
        """Run it; the number of rows it changed."""
        cursor, _ = self._run(conn, params)
        return int(cursor.rowcount)

    def many(self, conn: Connection | Tx, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run it once per parameter set of ``rows`` (``executemany``; one row
        is a plain execute, which psycopg does without a pipeline)."""
        if not rows:
            return
        if len(rows) == 1:
            self._run(conn, rows[0])
            return
        compiled = self._for(dialect_of(conn))
        if compiled.defaults:
            rows = [{**compiled.defaults, **row} for row in rows]
        raw = driver_connection(conn)
        cursor = raw.cursor()
        try:
            cursor.executemany(compiled.sql, rows)
        finally:
            cursor.close()

    def first(self, conn: Connection | Tx, **params: Any) -> Row | None:
        """The first row, or ``None``."""
        cursor, compiled = self._run(conn, params)
        found = cursor.fetchone()
        return None if found is None else compiled.row._make(found)

    def one(self, conn: Connection | Tx, **params: Any) -> Row:
        """The first row; raises ``LookupError`` if there is none."""
        found = self.first(conn, **params)
        if found is None:
            raise LookupError("the statement returned no row")
        return found

    def tuples(self, conn: Connection | Tx, **params: Any) -> list[tuple[Any, ...]]:
        """Every row as a plain tuple, columns in the statement's order (for
        long results, where making named tuples would cost)."""
        cursor, _ = self._run(conn, params)
        found: list[tuple[Any, ...]] = cursor.fetchall()
        return found

    def all(self, conn: Connection | Tx, **params: Any) -> list[Row]:
        """Every row."""
        cursor, compiled = self._run(conn, params)
        make = compiled.row._make
        return [make(found) for found in cursor.fetchall()]

    def scalar(self, conn: Connection | Tx, **params: Any) -> Any:
        """The first column of the first row, or ``None``."""
        cursor, _ = self._run(conn, params)
        found = cursor.fetchone()
        return None if found is None else found[0]
