"""The planner's statistics after bulk writes (PostgreSQL).

PostgreSQL plans from the statistics ``ANALYZE`` gathers; autovacuum
analyses a table once about 10% of it changed, but only on its next round
(``autovacuum_naptime``, a minute by default). Right after a bulk load into
a young table the planner still believes it (nearly) empty, and recall over
the new entries ran about twice as slow (issue 37) until autovacuum came.

So a write that adds at least ``BULK_ROWS`` rows to a table (an import, a
large ``BatchCreateMemories``) names it with ``grew``; once its transaction
committed, the write lane hands the names to the database's ``Analyzer``,
which runs ``ANALYZE`` on them in a thread and on a connection of its own,
off every request's path: nobody waits for it, and a failure is only
logged. Requests coalesce: tables named while an ``ANALYZE`` runs are
analysed once after it, and consecutive runs are spaced by ten times the
last one's duration, so that a long import costs at most about a tenth of
one core in statistics, with a last run after its last batch.

``ANALYZE (SKIP_LOCKED)`` takes a lock that blocks no read or write (only
DDL, vacuum and another analysis) and skips a table whose lock is taken
(autovacuum at work on it already). SQLite needs none of this: its planner
reads no gathered statistics unless told to, and Mnemo's reads there do not
depend on them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import Engine

from mnemo_server.store.transactions.tx import Tx

__all__ = ["BULK_ROWS", "Analyzer", "grew"]

log = logging.getLogger(__name__)

BULK_ROWS = 200
"""Rows one write adds to a table at least for the table to be analysed
after its commit (a fifth of the largest ``BatchCreateMemories``)."""

_SPACING = 10.0
"""Consecutive runs start at least this many times the last one's duration apart."""


def grew(tx: Tx, rows: Mapping[str, int]) -> None:
    """Record that the write of ``tx`` added ``rows[table]`` rows to each
    table; those with ``BULK_ROWS`` or more are analysed after its commit
    (on PostgreSQL)."""
    if tx.dialect != "postgresql":
        return
    tx.analyze.update(table for table, count in rows.items() if count >= BULK_ROWS)


class Analyzer:
    """Analyses the tables it is told of (``stale``) on its own thread and
    connection of ``engine`` (a PostgreSQL one); see the module doc."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._pending: set[str] = set()
        self._cond = threading.Condition()
        self._not_before = 0.0
        self._closed = False
        self._running = False
        self._thread: threading.Thread | None = None
        self.runs = 0
        """Completed runs (for tests and tools)."""

    def stale(self, tables: Collection[str]) -> None:
        """Analyse ``tables`` soon (safe from any thread; never blocks)."""
        if not tables:
            return
        with self._cond:
            if self._closed:
                return
            self._pending.update(tables)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mnemo-analyze", daemon=True)
                self._thread.start()
            self._cond.notify()

    def idle(self) -> bool:
        """Nothing pending and no run under way."""
        with self._cond:
            return not self._pending and not self._running

    def close(self, timeout_s: float = 5.0) -> None:
        """Drop what is pending and stop the thread (a run under way ends first)."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _next(self) -> list[str] | None:
        """The tables of the next run, once it is due; ``None`` once closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                wait = self._not_before - time.monotonic()
                if self._pending and wait <= 0:
                    tables = sorted(self._pending)
                    self._pending.clear()
                    self._running = True
                    return tables
                self._cond.wait(wait if self._pending else None)

    def _run(self) -> None:
        conn: Any = None
        try:
            while (tables := self._next()) is not None:
                started = time.monotonic()
                try:
                    if conn is None or conn.closed:
                        conn = self._connect()
                    conn.execute(f"ANALYZE (SKIP_LOCKED) {', '.join(tables)}")
                except Exception as error:  # statistics are an optimisation: log, go on
                    log.warning("ANALYZE %s failed: %s", ", ".join(tables), error)
                    with contextlib.suppress(Exception):
                        if conn is not None:
                            conn.close()
                    conn = None
                took = time.monotonic() - started
                with self._cond:
                    self._running = False
                    self._not_before = time.monotonic() + _SPACING * took
                    self.runs += 1
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

    def _connect(self) -> Any:
        """A driver connection of its own, in autocommit (not one of the
        pool's: those belong to the lanes)."""
        dialect = self._engine.dialect
        args, kwargs = dialect.create_connect_args(self._engine.url)
        options = {**kwargs, "connect_timeout": 10, "application_name": "mnemo-analyze"}
        conn = dialect.connect(*args, **options)
        conn.autocommit = True
        return conn
