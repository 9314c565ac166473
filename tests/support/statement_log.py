"""Every SQL statement a database driver runs, as the driver sees it.

``StatementLog`` hooks each new connection of every SQLAlchemy engine while
it is installed (``with StatementLog() as log:``), below SQLAlchemy and
below the store's own statement helper:

- SQLite: ``sqlite3.Connection.set_trace_callback``, which SQLite calls for
  each statement it runs, ``BEGIN``, ``COMMIT`` and savepoints included (an
  ``executemany`` of n rows runs its statement n times);
- PostgreSQL: a psycopg cursor class that records every ``execute`` and
  ``executemany`` call (one each, however many rows). psycopg begins a
  transaction by itself and commits through ``Connection.commit``, so
  ``BEGIN`` and ``COMMIT`` are not among them.

Only connections made after the log is installed are hooked: install it
before the server starts (the server's lanes connect on first use).
``PRAGMA`` statements are left out: they set up a new connection, which
is not the work of the call that happens to come first on it. So are the
statements SQLite runs inside another one (its trace shows them as ``-- ``
comments: an FTS5 table's own tables, triggers).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

import psycopg
from sqlalchemy import Engine, event

__all__ = ["StatementLog", "store_statements"]


class StatementLog:
    """The statements run by connections opened while installed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._statements: list[str] = []

    def _seen(self, sql: str) -> None:
        if sql.startswith(("PRAGMA ", "-- ")):
            return
        with self._lock:
            self._statements.append(" ".join(sql.split()))

    def _on_connect(self, dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.set_trace_callback(self._seen)
        elif isinstance(dbapi_connection, psycopg.Connection):
            dbapi_connection.cursor_factory = _counting_cursor(self._seen)

    def __enter__(self) -> Self:
        event.listen(Engine, "connect", self._on_connect)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        event.remove(Engine, "connect", self._on_connect)

    def take(self) -> list[str]:
        """The statements recorded since the last ``take``."""
        with self._lock:
            taken, self._statements = self._statements, []
        return taken

    @contextmanager
    def counting(self) -> Iterator[list[str]]:
        """The statements run inside the block (filled in when it ends)."""
        self.take()
        found: list[str] = []
        try:
            yield found
        finally:
            found.extend(self.take())


def _counting_cursor(seen: Any) -> type[psycopg.Cursor[Any]]:
    class CountingCursor(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Self:
            seen(str(query))
            return super().execute(query, params, **kwargs)

        def executemany(
            self, query: Any, params_seq: Iterable[Sequence[Any] | Mapping[str, Any]], **kwargs: Any
        ) -> None:
            seen(str(query))
            super().executemany(query, params_seq, **kwargs)

    return CountingCursor


def store_statements(statements: list[str], *, citus: bool) -> list[str]:
    """The statements of a call but Citus's change notice: on Citus the
    change feed notifies watchers with a statement of its own
    (``store.feed.changes``), at most one per call; elsewhere a trigger does."""
    notices = [s for s in statements if s.startswith("SELECT pg_notify(")]
    assert len(notices) <= (1 if citus else 0), "\n".join(statements)
    return [s for s in statements if s not in notices]
