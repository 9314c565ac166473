"""Lanes: threads that each own one database connection and run the units of
work the event loop queues for them, many per wake-up.

``Database`` (``store.transactions.database``) has two queues and lanes that drain them:

- **Write lanes** (one on SQLite, where there is one writer per file) take
  every write queued when they come free (up to ``BatchLimits``), run them
  in ONE transaction, each inside its own savepoint, and commit once: group
  commit. A failing write rolls back to its savepoint alone and gets its own
  error; the others commit. Nobody waits for company: a lane that finds one
  write runs it at once (without a savepoint), and the writes that arrive
  meanwhile form the next batch. Every caller is answered only after the
  commit, so the durability of each write is that of a commit of its own.
- **Read lanes** take up to ``BatchLimits.reads`` queued reads and run them
  in one read transaction (one snapshot, begun after all of them were
  queued, so each sees every write acknowledged before it was asked for).

A lane answers the event loop once per batch (``call_soon_threadsafe``), not
once per operation: at concurrency the hop into a thread and back costs a
few microseconds per operation instead of tens (``docs/performance.md``).

Retries: a write whose unit raises a retryable database error (a PostgreSQL
serialization failure or deadlock, a foreign key violation caused by a
concurrent erasure, SQLite busy, or ``RetryTransaction``) is rolled back
(to its savepoint) and queued again after a jittered backoff; after
``MAX_ATTEMPTS`` it fails with ``Aborted(CONCURRENT_MODIFICATION)``. A batch
that cannot begin or commit for such a reason runs again as a whole. A lost
or refused connection fails the batch with ``Unavailable`` (the lane
reconnects for the next one).

Deferred writes (``defer``) have nobody waiting for them (an analytics
event a read records): they ride the next batch, and a lane flushes them by
themselves at the latest ``BatchLimits.deferred_delay_s`` after the oldest
was queued, and at close.

Observation: a lane reports every transaction it ran (its kind, start and
end, and what ``Observer.queued`` returned for each of its operations) and
every retry (with ``failures.retry_cause``) to the ``domain.observe.Observer``
it was given, from its own thread; the no-op one by default.

Erasing writes (``Tx.truncate_wal``): on SQLite, once their batch committed,
the write lane checkpoints and truncates the WAL on its own connection
(``store.engine.wal``), before it wakes the watchers and answers the batch:
the deleted text is in no file of the database when the caller hears of the
delete. The lane is its process's only writer, so the checkpoint never
waits behind this process's own writes for the write lock (as it would on a
read lane, between back-to-back batches); the writes queued meanwhile wait
for it (one checkpoint per batch, however many erasing writes it holds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine

from mnemo_server.domain.errors import Aborted, MnemoError, Unavailable
from mnemo_server.domain.observe import NO_OBSERVER, Observer, Transaction, TransactionKind
from mnemo_server.store.engine.engines import WRITE_OPTION, read_options
from mnemo_server.store.engine.failures import Failure, classify, retry_cause, storage_full
from mnemo_server.store.engine.savepoints import Savepoint
from mnemo_server.store.engine.statistics import Analyzer
from mnemo_server.store.engine.wal import truncate_wal
from mnemo_server.store.transactions.tx import Replay, Tx

__all__ = [
    "MAX_ATTEMPTS",
    "BatchLimits",
    "Op",
    "OpQueue",
    "ReadLane",
    "WriteLane",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ATTEMPTS = 5
_BACKOFF_BASE_S = 0.005
_BACKOFF_CAP_S = 0.2
# Answer the loop early when a read batch has run this long: one slow read
# must not hold back the answers of the fast ones before it.
_READ_FLUSH_S = 0.002


@dataclass(frozen=True)
class BatchLimits:
    """How much one batch may take: ``writes`` operations and ``weight``
    bytes (the sum of the operations' size hints) per write batch, ``reads``
    per read batch; deferred writes wait at most ``deferred_delay_s``."""

    writes: int = 64
    weight: int = 4 * 1024 * 1024
    reads: int = 16
    deferred_delay_s: float = 1.0


@dataclass(eq=False)
class Op(Generic[T]):
    """One queued unit of work and who waits for it.

    ``work`` takes a ``Tx`` (writes) or a ``Connection`` (reads). ``future``
    is ``None`` for a deferred write. ``alone``: run in a batch of its own
    (erasure, import). ``started``: a lane has taken it; ``abandoned``: the
    caller stopped waiting before that, so it is skipped (both change under
    the queue's lock). ``observed``: what the ``Observer`` wants back with
    the operation's transaction (``Observer.queued``).
    """

    work: Callable[[Any], T]
    loop: asyncio.AbstractEventLoop | None
    future: asyncio.Future[tuple[T, int]] | None
    weight: int = 0
    alone: bool = False
    queued_at: float = field(default_factory=time.monotonic)
    not_before: float = 0.0
    attempts: int = 0
    started: bool = False
    abandoned: bool = False
    observed: object = None

    @property
    def deferred(self) -> bool:
        return self.future is None


# An operation's outcome: (value, change cursor) or the exception it raised.
Outcome = tuple[Any, int] | BaseException


class OpQueue:
    """Operations waiting for a lane, oldest first (``take`` hands out batches)."""

    def __init__(self) -> None:
        self._ops: deque[Op[Any]] = deque()
        self._changed = threading.Condition()
        self._closed = False
        self._deferred = 0
        """Deferred ops in ``_ops``."""

    def put(self, op: Op[Any], *, front: bool = False, wake: bool = True) -> None:
        """Queue ``op`` and, with ``wake``, wake a waiting lane (a deferred
        op too, so that the lane learns when to flush it, unless a deferred
        op queued before it is still waiting: that one is due first, and
        the batch that flushes it takes this one too); without, the caller
        calls ``wake`` later, once for many ops. Raises ``Unavailable`` once
        closed."""
        with self._changed:
            if self._closed:
                raise Unavailable(
                    "the server is shutting down; retry on another server", reason="UNAVAILABLE"
                )
            if op.deferred:
                # Waking a lane costs a thread switch per recall (each records
                # an event), and the lane already waits for an earlier deadline.
                wake = wake and not self._deferred
                self._deferred += 1
            op.started = False
            if front:
                self._ops.appendleft(op)
            else:
                self._ops.append(op)
            if wake:
                self._changed.notify()

    def wake(self) -> None:
        """Wake a waiting lane (after ``put(..., wake=False)``)."""
        with self._changed:
            self._changed.notify()

    def abandon(self, op: Op[Any]) -> bool:
        """Drop ``op`` if no lane has taken it yet (then it never runs); whether it was dropped."""
        with self._changed:
            if op.started:
                return False
            op.abandoned = True
            return True

    def close(self) -> None:
        """Refuse new operations; lanes drain what is queued, then stop."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def take(self, limits: BatchLimits, *, reads: bool) -> list[Op[Any]] | None:
        """The next batch (blocking until one is due); ``None`` once closed and empty."""
        count = limits.reads if reads else limits.writes
        with self._changed:
            while True:
                now = time.monotonic()
                if not self._ops and self._closed:
                    return None
                wait = self._due_in(now, limits)
                if wait <= 0:
                    batch = self._batch(now, count, limits.weight)
                    if batch:
                        if self._ops:  # more for another lane, if one is idle
                            self._changed.notify()
                        return batch
                    if not self._ops and self._closed:
                        # Only abandoned operations were left: nothing will
                        # wake this lane again (the close already did).
                        return None
                    wait = self._due_in(now, limits)
                self._changed.wait(None if wait == float("inf") else max(wait, 0.0005))

    def _due_in(self, now: float, limits: BatchLimits) -> float:
        """Seconds until a batch is due (0: now; inf: nothing to wait for)."""
        due = float("inf")
        for op in self._ops:
            if self._closed:
                return 0.0
            if op.deferred:
                due = min(due, op.queued_at + limits.deferred_delay_s - now)
            else:
                due = min(due, op.not_before - now)
            if due <= 0:
                return 0.0
        return due

    def _batch(self, now: float, count: int, weight: int) -> list[Op[Any]]:
        batch: list[Op[Any]] = []
        kept: deque[Op[Any]] = deque()
        taken_weight = 0
        while self._ops:
            op = self._ops.popleft()
            if op.abandoned:
                continue
            full = len(batch) >= count or (batch and taken_weight + op.weight > weight)
            waiting = op.not_before > now and not self._closed
            if full or waiting or (batch and (op.alone or batch[0].alone)):
                kept.append(op)
                if full or op.alone:
                    break
                continue
            op.started = True
            batch.append(op)
            taken_weight += op.weight
            if op.deferred:
                self._deferred -= 1
        kept.extend(self._ops)
        self._ops = kept
        return batch


def _backoff(attempt: int) -> float:
    cap = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
    return random.uniform(cap / 2, cap)


def _aborted() -> Aborted:
    return Aborted(
        "the data was modified concurrently too often; retry the request",
        reason="CONCURRENT_MODIFICATION",
    )


def _answer(outcomes: Iterable[tuple[Op[Any], Outcome]]) -> None:
    """Hand each waiting caller its outcome (on the loop it waits on)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Op[Any], Outcome]]] = {}
    for op, outcome in outcomes:
        if op.future is None:
            if isinstance(outcome, BaseException):
                log.warning("a deferred write failed: %r", outcome)
            continue
        assert op.loop is not None
        by_loop.setdefault(op.loop, []).append((op, outcome))
    for loop, answers in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, answers)


def _settle(answers: list[tuple[Op[Any], Outcome]]) -> None:
    for op, outcome in answers:
        future = op.future
        if future is None or future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


class _Lane(threading.Thread):
    """A thread with one connection of ``engine`` that drains ``queue``."""

    kind: TransactionKind = "write"

    def __init__(
        self,
        name: str,
        engine: Engine,
        queue: OpQueue,
        limits: BatchLimits,
        describe: str,
        on_commit: Callable[[list[str]], None] | None = None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._engine = engine
        self._queue = queue
        self._limits = limits
        self._describe = describe
        self._on_commit = on_commit
        self._observer = observer
        self._conn: Connection | None = None

    def _options(self) -> dict[str, Any]:
        raise NotImplementedError

    def _connection(self) -> Connection:
        if self._conn is None or self._conn.invalidated or self._conn.closed:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
            self._conn = self._engine.connect().execution_options(**self._options())
        return self._conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.invalidate()
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def run(self) -> None:
        reads = isinstance(self, ReadLane)
        try:
            while (batch := self._queue.take(self._limits, reads=reads)) is not None:
                try:
                    self._run_batch(batch)
                except BaseException as error:  # a bug in the lane: fail the batch, go on
                    log.exception("a %s batch failed unexpectedly", self.name)
                    _answer((op, error) for op in batch)
        finally:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()

    def _run_batch(self, batch: list[Op[Any]]) -> None:
        raise NotImplementedError

    def _unavailable(self, error: BaseException) -> MnemoError:
        self._drop_connection()
        failure = classify(error)
        if failure is not None and failure.storage_full:
            log.error("database %s is full: %s", self._describe, error)
            return storage_full(self._describe)
        log.warning("database %s unavailable: %s", self._describe, error)
        return Unavailable(
            f"the database is unavailable ({self._describe}); retry later", reason="UNAVAILABLE"
        )

    def _retry_or_fail(self, op: Op[Any], failure: Failure) -> Outcome | None:
        """Queue ``op`` again after a backoff (``None``), or its final outcome."""
        op.attempts += 1
        reason = failure.reason
        if op.attempts >= MAX_ATTEMPTS:
            log.warning("transaction failed %d times (%s); giving up", op.attempts, reason)
            return _aborted()
        log.debug("attempt %d failed (%s); retrying", op.attempts, reason)
        self._observer.retried(self.kind, retry_cause(failure))
        op.not_before = time.monotonic() + _backoff(op.attempts)
        try:
            self._queue.put(op, front=True)
        except Unavailable as closed:
            return closed
        return None


class WriteLane(_Lane):
    """Runs batches of writes, one transaction and one commit per batch.
    ``analyzer``: told of the tables a committed write grew by a bulk of
    rows (``Tx.analyze``, ``store.engine.statistics``)."""

    analyzer: Analyzer | None = None

    @property
    def _sqlite(self) -> bool:
        return self._engine.dialect.name == "sqlite"

    def _options(self) -> dict[str, Any]:
        return {WRITE_OPTION: True}

    def _run_batch(self, batch: list[Op[Any]]) -> None:
        requeued: list[Op[Any]] = []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            batch = [op for op in batch if op not in requeued]
            if not batch:
                return
            started = time.time_ns()
            try:
                outcomes, done = self._transaction(batch, requeued)
            except _BatchFailed as failed:
                failure = failed.failure
                if failure.unavailable:
                    error = self._unavailable(failure.error)
                    _answer((op, error) for op in batch if op not in requeued)
                    return
                log.debug("batch attempt %d failed (%s); retrying", attempt, failure.reason)
                self._observer.retried("write", retry_cause(failure))
                time.sleep(_backoff(attempt))
                continue
            self._observer.transaction(
                Transaction("write", started, time.time_ns(), [op.observed for op in batch])
            )
            if self._sqlite and any(tx.truncate_wal for tx in done):
                truncate_wal(self._connection().connection.dbapi_connection, self._describe)
            if self.analyzer is not None:
                self.analyzer.stale({table for tx in done for table in tx.analyze})
            if self._on_commit is not None:
                moved = [user_id for tx in done for user_id in tx.moved]
                if moved:
                    self._on_commit(moved)
            _answer(outcomes)
            return
        log.warning("batch failed %d times; giving up", MAX_ATTEMPTS)
        _answer((op, _aborted()) for op in batch if op not in requeued)

    def _transaction(
        self, batch: list[Op[Any]], requeued: list[Op[Any]]
    ) -> tuple[list[tuple[Op[Any], Outcome]], list[Tx]]:
        """Run ``batch`` in one transaction: the outcomes to answer once it
        committed and the ``Tx`` of each committed operation. Operations
        queued again for a retry are added to ``requeued``. Raises
        ``_BatchFailed`` if the transaction failed as a whole (nothing of it
        committed)."""
        outcomes: list[tuple[Op[Any], Outcome]] = []
        done: list[Tx] = []
        try:
            conn = self._connection()
            with conn.begin():
                raw = conn.connection.dbapi_connection
                if len(batch) == 1:
                    self._single(batch[0], Tx(conn, raw), outcomes, done, requeued)
                else:
                    savepoint = Savepoint(raw, joined=not self._sqlite)
                    for op in batch:
                        self._in_savepoint(op, Tx(conn, raw), savepoint, outcomes, done, requeued)
        except _RollBack:
            return outcomes, []
        except _BatchFailed:
            raise
        except Exception as error:
            failure = classify(error)
            if failure is None:
                raise
            raise _BatchFailed(failure) from error
        return outcomes, done

    def _single(
        self,
        op: Op[Any],
        tx: Tx,
        outcomes: list[tuple[Op[Any], Outcome]],
        done: list[Tx],
        requeued: list[Op[Any]],
    ) -> None:
        """The only operation of a batch: its failure rolls the transaction back."""
        try:
            value = op.work(tx)
        except Exception as error:
            outcome = self._failed(op, error, requeued)
            if outcome is not None:
                outcomes.append((op, outcome))
            raise _RollBack() from error
        outcomes.append((op, (value, tx.change_cursor)))
        done.append(tx)

    def _in_savepoint(
        self,
        op: Op[Any],
        tx: Tx,
        savepoint: Savepoint,
        outcomes: list[tuple[Op[Any], Outcome]],
        done: list[Tx],
        requeued: list[Op[Any]],
    ) -> None:
        """One operation of a shared batch, inside its own savepoint."""
        savepoint.enter()
        try:
            value = op.work(tx)
        except Exception as error:
            try:
                savepoint.roll_back()
            except Exception as broken:  # the transaction is gone as a whole
                failure = classify(broken) or classify(error)
                if failure is None:
                    raise
                raise _BatchFailed(failure) from broken
            outcome = self._failed(op, error, requeued)
            if outcome is not None:
                outcomes.append((op, outcome))
            return
        savepoint.kept()
        outcomes.append((op, (value, tx.change_cursor)))
        done.append(tx)

    def _failed(self, op: Op[Any], error: Exception, requeued: list[Op[Any]]) -> Outcome | None:
        """What ``op``'s caller gets for ``error`` (rolled back already; a
        ``Replay`` is a success), or ``None`` if it was queued again for a
        retry. Raises ``_BatchFailed`` if the connection is lost."""
        if isinstance(error, Replay):
            return (error.value, error.change_cursor)
        if isinstance(error, MnemoError):
            return error
        failure = classify(error)
        if failure is None:
            return error
        if failure.unavailable:
            raise _BatchFailed(failure) from error
        outcome = self._retry_or_fail(op, failure)
        if outcome is None:
            requeued.append(op)
        return outcome


class ReadLane(_Lane):
    """Runs batches of reads, one read-only transaction per batch."""

    kind: TransactionKind = "read"

    def _options(self) -> dict[str, Any]:
        return read_options(self._engine.dialect.name)

    def _run_batch(self, batch: list[Op[Any]]) -> None:
        outcomes: list[tuple[Op[Any], Outcome]] = []
        rest = deque(batch)
        failure: Failure | None = None
        started = time.time_ns()
        try:
            conn = self._connection()
            flushed_at = time.monotonic()
            with conn.begin():
                while rest:
                    op = rest[0]
                    try:
                        outcome: Outcome = (op.work(conn), 0)
                    except MnemoError as error:
                        outcome = error
                    except Exception as error:
                        found = classify(error, in_read=True)
                        if found is not None:  # the transaction may be unusable: end it
                            raise _BatchFailed(found) from error
                        outcome = error
                    rest.popleft()
                    outcomes.append((op, outcome))
                    if rest and time.monotonic() - flushed_at > _READ_FLUSH_S:
                        _answer(outcomes)
                        outcomes, flushed_at = [], time.monotonic()
        except _BatchFailed as failed:
            failure = failed.failure
        except Exception as error:
            failure = classify(error, in_read=True)
            if failure is None:
                raise
        if failure is None:
            self._observer.transaction(
                Transaction("read", started, time.time_ns(), [op.observed for op in batch])
            )
        if failure is not None and rest:
            if failure.unavailable:
                unavailable = self._unavailable(failure.error)
                outcomes.extend((op, unavailable) for op in rest)
                rest.clear()
            else:
                first = rest.popleft()
                retried = self._retry_or_fail(first, failure)
                if retried is not None:
                    outcomes.append((first, retried))
        for op in reversed(rest):  # not run: back to the front of the queue
            try:
                self._queue.put(op, front=True)
            except Unavailable as closed:
                outcomes.append((op, closed))
        _answer(outcomes)


class _RollBack(Exception):
    """Leave the transaction without committing (its only operation failed)."""


class _BatchFailed(Exception):
    """The batch's transaction failed as a whole; nothing of it was committed."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure
