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
(SQLSTATE 40001, 40P01), a busy SQLite database or an explicit
``RetryTransaction`` rolls back and runs the function again, a bounded number
of times with jittered backoff, then raises
``Aborted(reason="CONCURRENT_MODIFICATION")``. A lost or refused connection
raises ``Unavailable``. Domain errors raised by the function roll back and
propagate unchanged.

SQLite: WAL, ``busy_timeout``, ``foreign_keys=ON``, ``synchronous=FULL``;
writes begin with ``BEGIN IMMEDIATE`` (the write lock up front, so a
read-then-write never fails half way), reads with a plain ``BEGIN``, and the
writers of one process queue on an ``asyncio.Lock`` rather than on the file
lock. PostgreSQL: READ COMMITTED, explicit row locks (``SELECT ... FOR
UPDATE``) where a write depends on what it read, ``pool_pre_ping``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from mnemo_server.domain.errors import Aborted, Unavailable

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
Runner = Literal["thread", "async"]

MAX_ATTEMPTS = 5
_BACKOFF_BASE_S = 0.005
_BACKOFF_CAP_S = 0.2
SQLITE_BUSY_TIMEOUT_MS = 5000
# FULL, not NORMAL: in WAL mode NORMAL already survives a crash of this
# process, but a commit acknowledged to a remote client could still be lost
# to a power failure or an OS crash. FULL syncs the WAL at each commit, which
# matches what PostgreSQL (synchronous_commit=on) promises for the same call:
# an acknowledged write is on disk. It costs one fsync per write transaction.
SQLITE_SYNCHRONOUS = "FULL"
_WRITE_OPTION = "mnemo_write"
_PG_RETRYABLE = {"40001", "40P01"}  # serialization_failure, deadlock_detected
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
        self._reader = engine.execution_options(**_read_options(engine.dialect.name))
        self._writer = engine.execution_options(**{_WRITE_OPTION: True})
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mnemo-db")

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        engine = self._writer if write else self._reader
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, _transaction, engine, fn)

    async def close(self) -> None:
        self._executor.shutdown(wait=True)
        await asyncio.to_thread(self._engine.dispose)


class _AsyncEngines:
    """An asyncio engine; each transaction runs its function with ``run_sync``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._reader = engine.execution_options(**_read_options(engine.dialect.name))
        self._writer = engine.execution_options(**{_WRITE_OPTION: True})

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        engine = self._writer if write else self._reader
        async with engine.begin() as conn:
            return await conn.run_sync(fn)

    async def close(self) -> None:
        await self._engine.dispose()


def _read_options(dialect: str) -> dict[str, Any]:
    return {"postgresql_readonly": True} if dialect == "postgresql" else {}


# ------------------------------------------------------------------ engines


def normalize_url(url: str | URL, *, runner: Runner = "thread") -> URL:
    """The SQLAlchemy URL with the driver Mnemo uses for ``runner``.

    ``sqlite:///path`` becomes ``sqlite+pysqlite`` (thread) or
    ``sqlite+aiosqlite`` (async) with an absolute path; ``postgres://``,
    ``postgresql://`` become ``postgresql+psycopg`` (psycopg 3 serves both).
    Raises ``ValueError`` for other databases and for in-memory SQLite (each
    connection would see its own empty database).
    """
    parsed = make_url(url) if isinstance(url, str) else url
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.drivername not in ("sqlite", "sqlite+pysqlite", "sqlite+aiosqlite"):
            raise ValueError(f"unsupported SQLite driver {parsed.drivername!r}")
        if not parsed.database or parsed.database == ":memory:" or "mode=memory" in str(parsed):
            raise ValueError("an in-memory SQLite database cannot be shared: name a file")
        path = Path(parsed.database).expanduser().absolute()
        driver = "sqlite+aiosqlite" if runner == "async" else "sqlite+pysqlite"
        return parsed.set(drivername=driver, database=str(path))
    if backend in ("postgresql", "postgres"):
        if parsed.drivername not in ("postgres", "postgresql", "postgresql+psycopg"):
            raise ValueError(
                f"unsupported PostgreSQL driver {parsed.drivername!r}: use postgresql+psycopg://"
            )
        return parsed.set(drivername="postgresql+psycopg")
    raise ValueError(
        f"unsupported database {parsed.drivername!r}: use sqlite:///path or postgresql://..."
    )


def describe_url(url: str | URL) -> str:
    """``"sqlite /abs/path"`` or ``"postgresql host:port/db"``: never a password."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"sqlite {parsed.database}"
    return f"postgresql {parsed.host or 'localhost'}:{parsed.port or 5432}/{parsed.database or ''}"


def _configure_sqlite(engine: Engine) -> None:
    """WAL, pragmas, and SQLAlchemy in charge of BEGIN (SQLAlchemy's recipe
    for sqlite3 and aiosqlite: the driver's own implicit BEGIN is disabled)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _engine_options(url: URL, pool_size: int) -> dict[str, Any]:
    options: dict[str, Any] = {"pool_size": pool_size, "max_overflow": 0, "pool_timeout": 30}
    if url.get_backend_name() == "postgresql":
        options |= {
            "pool_pre_ping": True,
            "isolation_level": "READ COMMITTED",
            "connect_args": {"connect_timeout": 10, "application_name": "mnemo"},
        }
    return options


def create_sync_engine(url: str | URL, *, pool_size: int = 10) -> Engine:
    """A configured sync engine with a pool of ``pool_size`` connections."""
    parsed = normalize_url(url, runner="thread")
    return _sync_engine(parsed, **_engine_options(parsed, pool_size))


def migration_engine(url: str | URL) -> Engine:
    """A configured sync engine without a pool whose transactions are write
    transactions (on SQLite, a second migrating process waits for the first)."""
    parsed = normalize_url(url, runner="thread")
    options = _engine_options(parsed, 1)
    for key in ("pool_size", "max_overflow", "pool_timeout"):
        del options[key]
    engine = _sync_engine(parsed, poolclass=NullPool, **options)
    return engine.execution_options(**{_WRITE_OPTION: True})


def _sync_engine(url: URL, **options: Any) -> Engine:
    if url.get_backend_name() == "sqlite":
        Path(url.database or "").parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **options)
    if url.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    return engine


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
        if parsed.get_backend_name() == "sqlite":
            Path(parsed.database or "").parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(parsed, **_engine_options(parsed, pool_size))
        if parsed.get_backend_name() == "sqlite":
            _configure_sqlite(engine.sync_engine)
        engines = _AsyncEngines(engine)
    else:
        raise ValueError(f"unknown runner {runner!r}: use 'thread' or 'async'")
    return Database(parsed, engines)
