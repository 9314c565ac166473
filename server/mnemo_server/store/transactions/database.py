"""The one transaction helper: ``Database.read(fn)``, ``Database.write(fn)``
and ``Database.defer(fn)``.

A unit of work is a plain synchronous function: a read takes the SQLAlchemy
``Connection`` of a read-only transaction, a write takes a ``Tx`` (the
connection of a write transaction, plus what the write reports: its change
cursor). The event loop queues units of work; lanes (``store.engine.lanes``),
threads that each hold one connection, run them in batches: the writes of a
batch share one transaction and one commit (group commit), each in its own
savepoint, and the reads of a batch one snapshot.

Writes may run more than once: a retryable failure (see ``store.engine.failures``)
rolls the write back and runs it again, a bounded number of times with
jittered backoff, then raises ``Aborted(reason="CONCURRENT_MODIFICATION")``.
A lost or refused connection raises ``Unavailable``. Domain errors raised by
the function roll back that write alone and propagate unchanged. A write is
answered only after its batch committed.

SQLite: WAL, ``busy_timeout``, ``foreign_keys=ON``, ``synchronous=FULL``;
one write lane (one writer per file), whose transactions begin with ``BEGIN
IMMEDIATE``, and ``read_lanes`` read lanes. PostgreSQL: writes in READ
COMMITTED with explicit row locks (``SELECT ... FOR UPDATE``) where a write
depends on what it read; reads are read-only REPEATABLE READ, so that all
statements of one read see one snapshot; ``write_lanes`` and ``read_lanes``
lanes (each one connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL

from mnemo_server.domain.errors import MnemoError
from mnemo_server.domain.observe import NO_OBSERVER, Observer, Transaction
from mnemo_server.runtime.bounded_waits import SHUTDOWN_BOUND_S, join_thread
from mnemo_server.store.engine.engines import create_sync_engine, normalize_url
from mnemo_server.store.engine.engines import describe_url as describe_url
from mnemo_server.store.engine.engines import migration_engine as migration_engine
from mnemo_server.store.engine.failures import RetryTransaction, classify
from mnemo_server.store.engine.lanes import (
    MAX_ATTEMPTS,
    BatchLimits,
    Op,
    OpQueue,
    ReadLane,
    WriteLane,
)
from mnemo_server.store.engine.statistics import Analyzer
from mnemo_server.store.feed import notify
from mnemo_server.store.transactions.tx import Tx

__all__ = [
    "MAX_ATTEMPTS",
    "BatchLimits",
    "Database",
    "RetryTransaction",
    "SHORT_PAGE",
    "Tx",
    "create_sync_engine",
    "describe_url",
    "migration_engine",
    "normalize_url",
    "open_database",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

SHORT_PAGE = 100
"""Pages up to this many rows count as short reads (``Database.read``)."""

DEFAULT_READ_LANES = 2
"""Read lanes per database unless told otherwise (reads of one lane run one
after another; a second lets a long read not hold up the short ones)."""


class Database:
    """Runs units of work in transactions; see the module docstring."""

    def __init__(
        self,
        url: URL,
        engine: Engine,
        *,
        write_lanes: int = 1,
        read_lanes: int = DEFAULT_READ_LANES,
        limits: BatchLimits | None = None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self.dialect: str = url.get_backend_name()
        self.url: str = url.render_as_string(hide_password=True)
        self._display = describe_url(url)
        self._engine = engine
        self._limits = limits or BatchLimits()
        self._observer = observer
        self._writes = OpQueue()
        self._reads = OpQueue()
        on_commit = None
        if self.dialect == "sqlite":
            if write_lanes != 1:
                raise ValueError("SQLite has one writer per file: use one write lane")
            key = notify.file_key(url.database or "")
            on_commit = lambda moved: notify.committed(key, moved)  # noqa: E731
        self._lanes: list[WriteLane | ReadLane] = [
            WriteLane(
                f"mnemo-write-{n}",
                engine,
                self._writes,
                self._limits,
                self._display,
                on_commit,
                observer,
            )
            for n in range(write_lanes)
        ]
        self._lanes += [
            ReadLane(
                f"mnemo-read-{n}",
                engine,
                self._reads,
                self._limits,
                self._display,
                observer=observer,
            )
            for n in range(read_lanes)
        ]
        # PostgreSQL: the statistics of the tables a bulk write grew are
        # gathered after its commit (``store.engine.statistics``).
        self._analyzer = Analyzer(engine) if self.dialect == "postgresql" else None
        for lane in self._lanes:
            if isinstance(lane, WriteLane):
                lane.analyzer = self._analyzer
            lane.start()
        self._inline = _InlineReads(engine, observer) if self.dialect == "sqlite" else None
        self._closed = False
        self._deferred = 0  # deferred since the last flush
        self._waking: set[OpQueue] = set()  # queues with a wake-up scheduled

    @property
    def engine(self) -> Engine:
        """The engine the lanes' connections come from (for tests and tools)."""
        return self._engine

    @property
    def analyzer(self) -> Analyzer | None:
        """What analyses the tables bulk writes grew (PostgreSQL), or ``None``."""
        return self._analyzer

    @property
    def connections(self) -> int:
        """How many connections the lanes hold at most."""
        return len(self._lanes)

    def pool_usage(self) -> tuple[int, int]:
        """The engine's connection pool now: (connections it may hold, those
        checked out). Safe from any thread; for metrics."""
        pool: Any = self._engine.pool
        size = pool.size() if hasattr(pool, "size") else 0
        checked_out = pool.checkedout() if hasattr(pool, "checkedout") else 0
        return int(size), int(checked_out)

    def describe(self) -> str:
        """``"sqlite /abs/path/mnemo.db"`` or ``"postgresql host:port/db"`` (no password)."""
        return self._display

    async def read(
        self, fn: Callable[[Connection], T], *, alone: bool = False, short: bool = False
    ) -> T:
        """Run ``fn`` in a read-only transaction and return its result
        (``alone``: in a transaction of its own, which has read nothing yet).

        ``short``: ``fn`` reads a bounded, indexed handful of rows. On SQLite
        it then runs at once, on the calling thread (the event loop), with a
        connection of its own that never waits for a lock: handing it to a
        read lane and back would cost the loop more than the read itself.
        Should SQLite be busy, it goes to a read lane after all.

        Raises ``Unavailable`` when the database cannot be reached, and
        whatever domain error ``fn`` raises.
        """
        if short and self._inline is not None:
            found = self._inline.run(fn)
            if found is not _BUSY:
                return found  # type: ignore[return-value]
        value, _ = await self._submit(self._reads, fn, 0, alone)
        return value

    async def write(
        self, fn: Callable[[Tx], T], *, weight: int = 0, alone: bool = False
    ) -> tuple[T, int]:
        """Run ``fn`` in a write transaction; its result and change cursor
        (``Tx.change_cursor``: the last change it appended, 0 for none).

        ``fn`` may run several times (see the module docstring); it must not
        have effects outside the transaction. ``weight`` (bytes, roughly) and
        ``alone`` (a batch of its own) bound what shares its transaction.
        Raises ``Aborted`` after the last retry, ``Unavailable`` when the
        database cannot be reached (also when the connection broke during
        the commit, whose outcome is then unknown: a retry with the same
        request id tells), and whatever domain error ``fn`` raises.

        Cancelled (the call's deadline passed): a write no lane has taken yet
        is dropped and never runs; one that is running is not interrupted:
        its transaction commits or rolls back as a whole, and the
        cancellation goes on once it has (``tests/api/test_deadlines.py``).
        """
        return await self._submit(self._writes, fn, weight, alone)

    def defer(self, fn: Callable[[Tx], object]) -> None:
        """Run ``fn`` with the next batch of writes, within
        ``BatchLimits.deferred_delay_s`` at the latest (also at ``close``);
        nobody waits for it, and a failure is only logged. Raises
        ``Unavailable`` once closed."""
        self._writes.put(Op(fn, None, None, weight=0))
        self._deferred += 1

    async def flush(self) -> None:
        """Return once every write deferred before the call has been run
        (at once if none was deferred since the last flush)."""
        if not self._deferred:
            return
        self._deferred = 0
        await self.write(lambda _tx: None)

    async def _submit(
        self, queue: OpQueue, fn: Callable[[Any], T], weight: int, alone: bool
    ) -> tuple[T, int]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[T, int]] = loop.create_future()
        op = Op(fn, loop, future, weight=weight, alone=alone, observed=self._observer.queued())
        # The lane is woken once per turn of the event loop, however many
        # operations the turn queued (waking a thread costs the loop more
        # than queuing an operation).
        queue.put(op, wake=False)
        if queue not in self._waking:
            self._waking.add(queue)
            loop.call_soon(self._wake, queue)
        try:
            # Shielded: a cancelled caller must not cancel the operation's
            # future, which the lane still answers.
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # Not started yet: it never will be. Started: it cannot be stopped
            # half way, so let it end before the cancellation goes on.
            if not queue.abandon(op):
                with contextlib.suppress(BaseException):
                    await future
            raise

    def _wake(self, queue: OpQueue) -> None:
        self._waking.discard(queue)
        queue.wake()

    async def close(self, bound_s: float = SHUTDOWN_BOUND_S) -> None:
        """Run what is queued, then close every connection; the database
        cannot be used afterwards. Raises ``ShutdownHang`` (with the lane's
        stack) when a lane does not stop within ``bound_s`` seconds."""
        if self._closed:
            return
        self._closed = True
        self._writes.close()
        self._reads.close()
        for lane in self._lanes:
            await join_thread(lane, "a database lane", bound_s)
        if self._inline is not None:
            self._inline.close()
        if self._analyzer is not None:
            await asyncio.to_thread(self._analyzer.close)
        await asyncio.to_thread(self._engine.dispose)


_BUSY = object()
"""What ``_InlineReads.run`` answers when SQLite is busy."""


class _InlineReads:
    """Short SQLite reads on the event loop's thread (``Database.read(short=True)``),
    on one connection that does not wait for locks (``busy_timeout=0``)."""

    def __init__(self, engine: Engine, observer: Observer) -> None:
        self._engine = engine
        self._observer = observer
        self._conn: Connection | None = None

    def _connection(self) -> Connection:
        if self._conn is None or self._conn.invalidated or self._conn.closed:
            self._conn = self._engine.connect()
            self._conn.exec_driver_sql("PRAGMA busy_timeout=0")
            self._conn.commit()
        return self._conn

    def run(self, fn: Callable[[Connection], T]) -> T | object:
        started = time.time_ns()
        try:
            conn = self._connection()
            with conn.begin():
                found = fn(conn)
        except MnemoError:
            self._observed(started)
            raise
        except Exception as error:
            failure = classify(error, in_read=True)
            if failure is None:
                raise
            self.close()  # a fresh connection next time
            return _BUSY
        self._observed(started)
        return found

    def _observed(self, started: int) -> None:
        observer = self._observer
        observer.transaction(Transaction("read", started, time.time_ns(), (observer.queued(),)))

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


def open_database(
    url: str,
    *,
    read_lanes: int = DEFAULT_READ_LANES,
    write_lanes: int = 1,
    limits: BatchLimits | None = None,
    observer: Observer = NO_OBSERVER,
) -> Database:
    """Open (lazily: nothing connects yet) the database at ``url``.

    ``url``: ``sqlite:///path/to/mnemo.db`` (the parent directory is created)
    or ``postgresql+psycopg://user:pass@host:port/db``. Each lane holds one
    connection; ``observer`` hears of every transaction and retry
    (``domain.observe``). Raises ``ValueError`` for an unsupported URL or
    lane count.
    """
    if read_lanes < 1 or write_lanes < 1:
        raise ValueError("a database needs at least one read lane and one write lane")
    parsed = normalize_url(url)
    # One connection per lane, and one for the short reads on the event loop.
    engine = create_sync_engine(parsed, pool_size=read_lanes + write_lanes + 1)
    return Database(
        parsed,
        engine,
        write_lanes=write_lanes,
        read_lanes=read_lanes,
        limits=limits,
        observer=observer,
    )
