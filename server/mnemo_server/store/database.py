"""The one transaction helper: ``Database.read(fn)`` and ``Database.write(fn)``.

A unit of work is a plain synchronous function of a SQLAlchemy Core
``Connection``; the helper opens a transaction, runs it, commits, and turns
driver errors into domain errors. The same functions serve two runners, chosen
by ``open_database(..., runner=...)`` (the benchmark compares them):

- ``"thread"``: a sync engine (sqlite3 / psycopg); each transaction runs in a
  bounded ``ThreadPoolExecutor`` awaited from the event loop.
- ``"async"``: an asyncio engine (aiosqlite / psycopg async); each transaction
  runs through ``AsyncConnection.run_sync``.

Writes may run more than once: a PostgreSQL serialization failure or deadlock
(SQLSTATE 40001, 40P01), a foreign key violation (23503: a concurrent erasure
of the user), a busy SQLite database or an explicit
``RetryTransaction`` rolls back and runs the function again, a bounded number
of times with jittered backoff, then raises
``Aborted(reason="CONCURRENT_MODIFICATION")``. A lost or refused connection
raises ``Unavailable``. Domain errors raised by the function roll back and
propagate unchanged.

SQLite: WAL, ``busy_timeout``, ``foreign_keys=ON``, ``synchronous=FULL``;
writes begin with ``BEGIN IMMEDIATE`` (the write lock up front, so a
read-then-write never fails half way), reads with a plain ``BEGIN``, and the
writers of one process queue on an ``asyncio.Lock`` rather than on the file
lock. PostgreSQL: writes in READ COMMITTED with explicit row locks (``SELECT ... FOR
UPDATE``) where a write depends on what it read, ``pool_pre_ping``; reads
are read-only REPEATABLE READ, so that all statements of one read see one
snapshot.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from sqlalchemy import Connection, Engine, exc
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from mnemo_server.domain.errors import Aborted, Unavailable
from mnemo_server.store import change_sink
from mnemo_server.store.engines import (
    WRITE_OPTION,
    Runner,
    create_async,
    create_sync_engine,
    normalize_url,
    read_options,
)
from mnemo_server.store.engines import describe_url as describe_url
from mnemo_server.store.engines import migration_engine as migration_engine

__all__ = [
    "Database",
    "RetryTransaction",
    "Runner",
    "create_sync_engine",
    "describe_url",
    "migration_engine",
    "normalize_url",
    "open_database",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ATTEMPTS = 5
_BACKOFF_BASE_S = 0.005
_BACKOFF_CAP_S = 0.2
# serialization_failure, deadlock_detected, and foreign_key_violation: the
# user a write inserts rows for was erased (DeleteUserData) by a transaction
# that committed while the write waited for it; run again, the write creates
# the user anew.
_PG_RETRYABLE = {"40001", "40P01", "23503"}
# PostgreSQL SQLSTATE classes meaning "the server cannot serve now":
# connection exceptions, insufficient resources, operator intervention.
_PG_UNAVAILABLE_CLASSES = ("08", "53", "57")
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
_SQLITE_UNAVAILABLE = ("unable to open database", "disk i/o error", "database or disk is full")


class RetryTransaction(Exception):
    """Raised by a unit of work to roll back and run again (for example after
    losing an insert race on a unique key); counts as one attempt."""


class _Engines(Protocol):
    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T: ...

    async def close(self) -> None: ...


class Database:
    """Runs units of work in transactions; see the module docstring."""

    def __init__(self, url: URL, engines: _Engines) -> None:
        self.dialect: str = url.get_backend_name()
        self.url: str = url.render_as_string(hide_password=True)
        self._display = describe_url(url)
        self._engines = engines
        # SQLite has one writer at a time: queue this process's writers here
        # instead of polling the file lock (busy_timeout still covers other
        # processes sharing the file).
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None

    def describe(self) -> str:
        """``"sqlite /abs/path/mnemo.db"`` or ``"postgresql host:port/db"`` (no password)."""
        return self._display

    async def read(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in a read-only transaction and return its result."""
        return await self._run(fn, write=False)

    async def write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in a write transaction and return its result.

        ``fn`` may run several times (see the module docstring); it must not
        have effects outside the connection. Raises ``Aborted`` after the last
        retry, ``Unavailable`` when the database cannot be reached, and
        whatever domain error ``fn`` raises.
        """
        return await self._run(fn, write=True)

    async def close(self) -> None:
        """Close every connection; the database cannot be used afterwards."""
        await self._engines.close()

    async def _run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                # A failed attempt takes back the change cursor it reported.
                with change_sink.attempt():
                    if write and self._write_lock is not None:
                        async with self._write_lock:
                            return await _finish(self._engines.run(fn, write=write))
                    return await _finish(self._engines.run(fn, write=write))
            except RetryTransaction:
                reason = "retry requested"
            except exc.DBAPIError as error:
                reason = self._classify(error)
            except exc.TimeoutError as error:  # no pooled connection came free in time
                raise Unavailable(
                    f"the database {self._display} has no free connection; retry later"
                ) from error
            if attempt < MAX_ATTEMPTS:
                log.debug("transaction attempt %d failed (%s); retrying", attempt, reason)
                cap = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
                await asyncio.sleep(random.uniform(cap / 2, cap))
        log.warning("transaction failed %d times (%s); giving up", MAX_ATTEMPTS, reason)
        raise Aborted(
            "the data was modified concurrently too often; retry the request",
            reason="CONCURRENT_MODIFICATION",
        )

    def _classify(self, error: exc.DBAPIError) -> str:
        """A short reason if ``error`` is worth a retry; otherwise raise the
        domain error it stands for (or re-raise it)."""
        orig = error.orig
        message = str(orig).lower()
        if self.dialect == "postgresql":
            sqlstate = str(getattr(orig, "sqlstate", None) or "")
            if sqlstate in _PG_RETRYABLE:
                return f"SQLSTATE {sqlstate}"
            if (
                error.connection_invalidated
                or sqlstate.startswith(_PG_UNAVAILABLE_CLASSES)
                or (isinstance(error, exc.OperationalError) and not sqlstate)
            ):
                raise _unavailable(self._display, error) from error
        else:
            if any(text in message for text in _SQLITE_BUSY):
                return message
            if error.connection_invalidated or any(t in message for t in _SQLITE_UNAVAILABLE):
                raise _unavailable(self._display, error) from error
        raise error


async def _finish(work: Awaitable[T]) -> T:
    """Await ``work``; if the caller is cancelled meanwhile, let the started
    transaction end first (it cannot be stopped half way in a thread), then
    propagate the cancellation."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done():
            await asyncio.wait([task])
        raise


def _unavailable(where: str, error: exc.DBAPIError) -> Unavailable:
    log.warning("database %s unavailable: %s", where, error.orig)
    return Unavailable(f"the database is unavailable ({where}); retry later")


# ------------------------------------------------------------------ runners


def _transaction(engine: Engine, fn: Callable[[Connection], T]) -> T:
    with engine.begin() as conn:
        return fn(conn)


class _ThreadEngines:
    """A sync engine; transactions run in a bounded pool of threads."""

    def __init__(self, engine: Engine, workers: int) -> None:
        self._engine = engine
        self._reader = engine.execution_options(**read_options(engine.dialect.name))
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mnemo-db")

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        engine = self._writer if write else self._reader
        loop = asyncio.get_running_loop()
        # The unit of work sees the caller's context (``auth.caller``), as it
        # does under the async runner.
        context = contextvars.copy_context()
        return await loop.run_in_executor(self._executor, context.run, _transaction, engine, fn)

    async def close(self) -> None:
        # Both wait for running transactions: keep the event loop free meanwhile.
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        await asyncio.to_thread(self._engine.dispose)


class _AsyncEngines:
    """An asyncio engine; each transaction runs its function with ``run_sync``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._reader = engine.execution_options(**read_options(engine.dialect.name))
        self._writer = engine.execution_options(**{WRITE_OPTION: True})

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        engine = self._writer if write else self._reader
        async with engine.begin() as conn:
            return await conn.run_sync(fn)

    async def close(self) -> None:
        await self._engine.dispose()


# ------------------------------------------------------------------- open


def open_database(url: str, *, runner: Runner = "thread", pool_size: int = 10) -> Database:
    """Open (lazily: nothing connects yet) the database at ``url``.

    ``url``: ``sqlite:///path/to/mnemo.db`` (the parent directory is created)
    or ``postgresql+psycopg://user:pass@host:port/db``. ``pool_size`` bounds
    the connections (and, for the thread runner, the worker threads).
    Raises ``ValueError`` for an unsupported URL or runner.
    """
    if pool_size < 1:
        raise ValueError("pool_size must be at least 1")
    parsed = normalize_url(url, runner=runner)
    engines: _Engines
    if runner == "thread":
        engines = _ThreadEngines(create_sync_engine(parsed, pool_size=pool_size), pool_size)
    elif runner == "async":
        engines = _AsyncEngines(create_async(parsed, pool_size=pool_size))
    else:
        raise ValueError(f"unknown runner {runner!r}: use 'thread' or 'async'")
    return Database(parsed, engines)
