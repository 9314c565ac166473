"""The transaction helper (``Database``) and its lanes: group commit with a
savepoint per write, batched reads, retries, rollbacks, deferred writes,
error translation and the SQLite settings, on every backend where it applies."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection, event, exc, insert, select

from mnemo_server.domain.errors import Aborted, NotFound, Unavailable
from mnemo_server.runtime.bounded_waits import ShutdownHang
from mnemo_server.store.engine import engines
from mnemo_server.store.schema import users
from mnemo_server.store.transactions.database import (
    MAX_ATTEMPTS,
    BatchLimits,
    Database,
    RetryTransaction,
    Tx,
    create_sync_engine,
    describe_url,
    open_database,
)


def add_user(user_id: str) -> Callable[[Tx], str]:
    def work(tx: Tx) -> str:
        tx.conn.execute(insert(users).values(user_id=user_id, created_at=0))
        return user_id

    return work


def user_ids(conn: Connection) -> list[str]:
    return list(conn.execute(select(users.c.user_id).order_by(users.c.user_id)).scalars())


class Gate:
    """A write that holds its lane until ``open``: the writes queued meanwhile
    form the next batch."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self._open = threading.Event()

    def work(self, tx: Tx) -> None:
        self.entered.set()
        self._open.wait(timeout=30)

    async def wait_entered(self) -> None:
        await asyncio.to_thread(self.entered.wait, 30)

    def open(self) -> None:
        self._open.set()


def counting_write_commits(database: Database) -> list[int]:
    """A list that gets an entry for every write transaction ``database`` commits."""
    seen: list[int] = []

    @event.listens_for(database.engine, "commit")
    def count(conn: Connection) -> None:
        if conn.get_execution_options().get(engines.WRITE_OPTION):
            seen.append(1)

    return seen


@pytest.fixture
def commits(database: Database) -> list[int]:
    return counting_write_commits(database)


async def held_batch(database: Database, *works: Callable[[Tx], object]) -> list[object]:
    """Run ``works`` as one batch: queued while a gate holds the write lane."""
    gate = Gate()
    held = asyncio.ensure_future(database.write(gate.work))
    await gate.wait_entered()
    pending = [asyncio.ensure_future(database.write(work)) for work in works]
    await asyncio.sleep(0.05)  # every write is queued behind the gate
    gate.open()
    await held
    return list(await asyncio.gather(*pending, return_exceptions=True))


async def test_reads_and_writes(database: Database) -> None:
    assert await database.write(add_user("u1")) == ("u1", 0)
    assert await database.read(user_ids) == ["u1"]


async def test_a_domain_error_rolls_the_write_back(database: Database) -> None:
    def work(tx: Tx) -> None:
        add_user("u1")(tx)
        raise NotFound("not there", reason="NOT_FOUND")

    with pytest.raises(NotFound):
        await database.write(work)
    assert await database.read(user_ids) == []


async def test_concurrent_writes_share_one_commit_and_a_failing_one_rolls_back_alone(
    database: Database, commits: list[int]
) -> None:
    def failing(tx: Tx) -> None:
        add_user("bad")(tx)
        raise NotFound("not there", reason="NOT_FOUND")

    before = len(commits)
    outcomes = await held_batch(database, add_user("a"), failing, add_user("b"), add_user("c"))
    assert outcomes[0] == ("a", 0) and outcomes[2:] == [("b", 0), ("c", 0)]
    assert isinstance(outcomes[1], NotFound)
    # The gate's own transaction, then one for the four queued writes.
    assert len(commits) - before == 2
    assert await database.read(user_ids) == ["a", "b", "c"]


async def test_failing_writes_first_and_last_in_a_batch_leave_nothing_behind(
    database: Database,
) -> None:
    """The savepoint a failed write rolled back to serves the next write;
    the last write's is released by the commit (``engine.savepoints``)."""

    def failing(user_id: str) -> Callable[[Tx], None]:
        def work(tx: Tx) -> None:
            add_user(user_id)(tx)
            raise NotFound("not there", reason="NOT_FOUND")

        return work

    outcomes = await held_batch(
        database, failing("bad-1"), add_user("a"), failing("bad-2"), add_user("b"), failing("bad-3")
    )
    assert [type(o) for o in outcomes[0::2]] == [NotFound] * 3
    assert outcomes[1::2] == [("a", 0), ("b", 0)]
    assert await database.read(user_ids) == ["a", "b"]


async def test_a_batch_is_bounded_by_count_and_weight(database_url: str) -> None:
    db = open_database(database_url, limits=BatchLimits(writes=2, weight=100))
    try:
        batches = counting_write_commits(db)
        gate = Gate()
        held = asyncio.ensure_future(db.write(gate.work))
        await gate.wait_entered()
        light = [asyncio.ensure_future(db.write(add_user(f"u{n}"))) for n in range(4)]
        heavy = [asyncio.ensure_future(db.write(add_user(f"h{n}"), weight=80)) for n in range(2)]
        await asyncio.sleep(0.05)
        gate.open()
        await asyncio.gather(held, *light, *heavy)
        # gate; u0+u1; u2+u3; h0 (80) and h1 (80) do not fit 100 together.
        assert len(batches) == 5
    finally:
        await db.close()


async def test_a_write_asking_to_be_alone_gets_a_transaction_of_its_own(
    database: Database, commits: list[int]
) -> None:
    gate = Gate()
    held = asyncio.ensure_future(database.write(gate.work))
    await gate.wait_entered()
    before = len(commits)
    first = asyncio.ensure_future(database.write(add_user("a")))
    alone = asyncio.ensure_future(database.write(add_user("b"), alone=True))
    last = asyncio.ensure_future(database.write(add_user("c")))
    await asyncio.sleep(0.05)
    gate.open()
    await asyncio.gather(held, first, alone, last)
    assert len(commits) - before == 4  # gate, a, b alone, c
    assert await database.read(user_ids) == ["a", "b", "c"]


async def test_a_requested_retry_runs_the_work_again_and_keeps_only_the_last_run(
    database: Database,
) -> None:
    attempts: list[int] = []

    def work(tx: Tx) -> int:
        attempts.append(len(attempts) + 1)
        add_user(f"attempt-{len(attempts)}")(tx)
        if len(attempts) < 3:
            raise RetryTransaction("again")
        return len(attempts)

    assert await database.write(work) == (3, 0)
    assert await database.read(user_ids) == ["attempt-3"]


async def test_a_retried_write_of_a_shared_batch_is_retried_alone_and_the_others_commit(
    database: Database,
) -> None:
    attempts: list[int] = []

    def flaky(tx: Tx) -> str:
        attempts.append(1)
        add_user(f"flaky-{len(attempts)}")(tx)
        if len(attempts) == 1:
            raise RetryTransaction("lost a race")
        return "flaky"

    outcomes = await held_batch(database, add_user("a"), flaky, add_user("b"))
    assert outcomes == [("a", 0), ("flaky", 0), ("b", 0)]
    assert await database.read(user_ids) == ["a", "b", "flaky-2"]


async def test_retries_are_bounded_then_aborted(database: Database) -> None:
    attempts = 0

    def work(tx: Tx) -> None:
        nonlocal attempts
        attempts += 1
        raise RetryTransaction("always")

    with pytest.raises(Aborted) as caught:
        await database.write(work)
    assert caught.value.reason == "CONCURRENT_MODIFICATION"
    assert attempts == MAX_ATTEMPTS


async def test_the_change_cursor_is_the_one_of_the_attempt_that_committed(
    database: Database,
) -> None:
    attempts: list[int] = []

    def work(tx: Tx) -> None:
        attempts.append(1)
        tx.change_cursor = 10 * len(attempts)
        if len(attempts) == 1:
            raise RetryTransaction("again")

    assert await database.write(work) == (None, 20)


async def test_all_statements_of_a_read_see_one_snapshot(
    database: Database, database_url: str
) -> None:
    other = create_sync_engine(database_url, pool_size=1)

    def read_around_a_commit(conn: Connection) -> tuple[list[str], list[str]]:
        before = user_ids(conn)
        with other.begin() as writer:  # another client commits meanwhile
            writer.execute(insert(users).values(user_id="u2", created_at=0))
        return before, user_ids(conn)

    await database.write(add_user("u1"))
    try:
        assert await database.read(read_around_a_commit) == (["u1"], ["u1"])
        assert await database.read(user_ids) == ["u1", "u2"]
    finally:
        other.dispose()


async def test_a_read_asked_after_a_write_was_answered_sees_it(database: Database) -> None:
    for n in range(20):
        await database.write(add_user(f"u{n:02}"))
        assert (await database.read(user_ids))[-1] == f"u{n:02}"


async def test_a_cancelled_write_still_finishes_its_transaction(database: Database) -> None:
    started, proceed = threading.Event(), threading.Event()

    def work(tx: Tx) -> None:
        started.set()
        proceed.wait(timeout=30)
        add_user("u1")(tx)

    task = asyncio.ensure_future(database.write(work))
    await asyncio.to_thread(started.wait, 30)
    task.cancel()
    await asyncio.sleep(0)  # let the cancellation reach the write
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await database.read(user_ids) == ["u1"]


async def test_a_write_cancelled_before_it_started_never_runs(database: Database) -> None:
    gate = Gate()
    held = asyncio.ensure_future(database.write(gate.work))
    await gate.wait_entered()
    queued = asyncio.ensure_future(database.write(add_user("never")))
    await asyncio.sleep(0.01)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    gate.open()
    await held
    assert await database.read(user_ids) == []


async def test_a_deferred_write_rides_the_next_batch_or_is_flushed(
    database: Database, commits: list[int]
) -> None:
    database.defer(add_user("deferred-1"))
    await asyncio.sleep(0.05)
    assert await database.read(user_ids) == []  # nobody asked for a batch yet
    before = len(commits)
    await database.write(add_user("direct"))
    assert await database.read(user_ids) == ["deferred-1", "direct"]
    assert len(commits) - before == 1  # one transaction for both
    database.defer(add_user("deferred-2"))
    await database.flush()
    assert "deferred-2" in await database.read(user_ids)


async def test_a_deferred_write_alone_is_committed_within_the_delay(database_url: str) -> None:
    db = open_database(database_url, limits=BatchLimits(deferred_delay_s=0.1))
    try:
        db.defer(add_user("later"))
        for _ in range(100):
            if await db.read(user_ids) == ["later"]:
                break
            await asyncio.sleep(0.02)
        assert await db.read(user_ids) == ["later"]
    finally:
        await db.close()


async def test_deferred_writes_queued_together_are_committed_together_within_the_delay(
    database_url: str,
) -> None:
    # Only the first wakes a lane (each recall defers an event: a thread
    # switch apiece otherwise); the others ride the batch that flushes it.
    db = open_database(database_url, limits=BatchLimits(deferred_delay_s=0.1))
    try:
        wanted = [f"later-{i:02d}" for i in range(20)]
        for user_id in wanted:
            db.defer(add_user(user_id))
        for _ in range(100):
            if await db.read(user_ids) == wanted:
                break
            await asyncio.sleep(0.02)
        assert await db.read(user_ids) == wanted
        db.defer(add_user("later-20"))  # the next one wakes a lane again
        for _ in range(100):
            if "later-20" in await db.read(user_ids):
                break
            await asyncio.sleep(0.02)
        assert await db.read(user_ids) == [*wanted, "later-20"]
    finally:
        await db.close()


async def test_closing_runs_the_deferred_writes(database_url: str) -> None:
    db = open_database(database_url)
    db.defer(add_user("at-close"))
    await db.close()
    reopened = open_database(database_url)
    try:
        assert await reopened.read(user_ids) == ["at-close"]
        with pytest.raises(Unavailable):
            await db.write(add_user("after-close"))
    finally:
        await reopened.close()


async def test_a_lane_that_does_not_stop_is_an_error_with_its_stack(database_url: str) -> None:
    db = open_database(database_url)
    gate = Gate()
    held = asyncio.ensure_future(db.write(gate.work))
    await gate.wait_entered()
    try:
        with pytest.raises(ShutdownHang) as hang:
            await db.close(bound_s=0.2)
        assert "a database lane" in str(hang.value)
        assert "in work" in str(hang.value)  # Gate.work, where the lane is held
    finally:
        gate.open()
        await held


async def test_a_failing_deferred_write_is_only_logged(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(tx: Tx) -> None:
        raise NotFound("gone", reason="NOT_FOUND")

    database.defer(failing)
    await database.flush()
    await database.write(add_user("fine"))
    assert await database.read(user_ids) == ["fine"]
    assert "a deferred write failed" in caplog.text


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_reads_are_read_only_on_postgresql(database: Database) -> None:
    def write_in_a_read(conn: Connection) -> None:
        conn.execute(insert(users).values(user_id="u1", created_at=0))

    with pytest.raises(exc.DBAPIError) as caught:
        await database.read(write_in_a_read)
    assert "read-only" in str(caught.value)


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_deadlock_is_retried_on_postgresql(database_url: str) -> None:
    db = open_database(database_url, write_lanes=2, limits=BatchLimits(writes=1))
    try:
        await db.write(add_user("a"))
        await db.write(add_user("b"))
        barrier = threading.Barrier(2, timeout=30)
        attempts = {"ab": 0, "ba": 0}

        def lock_in_order(first: str, second: str) -> Callable[[Tx], str]:
            def work(tx: Tx) -> str:
                attempts[first + second] += 1
                lock = select(users.c.user_id).where(users.c.user_id == first).with_for_update()
                tx.conn.execute(lock)
                if attempts[first + second] == 1:
                    barrier.wait()  # both hold their first lock: each now waits for the other
                tx.conn.execute(
                    select(users.c.user_id).where(users.c.user_id == second).with_for_update()
                )
                return first + second

            return work

        results = await asyncio.gather(
            db.write(lock_in_order("a", "b")), db.write(lock_in_order("b", "a"))
        )
        assert sorted(value for value, _ in results) == ["ab", "ba"]
        assert sorted(attempts.values()) == [1, 2]  # PostgreSQL broke the deadlock once
    finally:
        await db.close()


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_settings(database: Database) -> None:
    def pragmas(conn: Connection) -> list[object]:
        names = ["journal_mode", "foreign_keys", "synchronous", "busy_timeout"]
        return [conn.exec_driver_sql(f"PRAGMA {name}").scalar() for name in names]

    assert await database.read(pragmas) == ["wal", 1, 2, engines.SQLITE_BUSY_TIMEOUT_MS]


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_sqlite_has_one_write_lane(database_url: str) -> None:
    with pytest.raises(ValueError, match="one writer per file"):
        open_database(database_url, write_lanes=2)


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_sqlite_file_locked_by_another_process_is_retried_then_aborted(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engines, "SQLITE_BUSY_TIMEOUT_MS", 20)
    path = database_url.removeprefix("sqlite:///")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    db = open_database(database_url)
    try:
        with pytest.raises(Aborted) as caught:
            await db.write(add_user("u1"))
        assert caught.value.reason == "CONCURRENT_MODIFICATION"
        other.execute("ROLLBACK")
        await db.write(add_user("u1"))  # free again
        assert await db.read(user_ids) == ["u1"]
    finally:
        other.close()
        await db.close()


async def test_an_unreachable_postgresql_is_unavailable(unused_port: int) -> None:
    db = open_database(f"postgresql://mnemo:secret@127.0.0.1:{unused_port}/mnemo")
    try:
        with pytest.raises(Unavailable) as caught:
            await db.read(user_ids)
        assert "secret" not in str(caught.value)
        with pytest.raises(Unavailable):
            await db.write(add_user("u1"))
    finally:
        await db.close()


async def test_an_unopenable_sqlite_file_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "a-directory.db").mkdir()
    db = open_database(f"sqlite:///{tmp_path / 'a-directory.db'}")
    try:
        with pytest.raises(Unavailable):
            await db.read(user_ids)
    finally:
        await db.close()


async def test_a_connection_broken_inside_a_write_is_unavailable_and_the_next_write_reconnects(
    database: Database,
) -> None:
    """SQLAlchemy's own error for a connection invalidated in the middle of a
    transaction (``PendingRollbackError``), as a unit of work meets it, is
    UNAVAILABLE (not an unexpected error, INTERNAL), alone and in a shared
    batch; the lane reconnects for the next write."""

    def broken(tx: Tx) -> None:
        add_user("lost")(tx)
        tx.conn.invalidate()
        add_user("lost-too")(tx)  # raises PendingRollbackError

    with pytest.raises(Unavailable):
        await database.write(broken)
    outcomes = await held_batch(database, add_user("u1"), broken)
    assert [type(outcome) for outcome in outcomes] == [Unavailable, Unavailable]
    await database.write(add_user("u2"))
    assert await database.read(user_ids) == ["u2"]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_closed_driver_cursor_inside_a_write_is_unavailable(database: Database) -> None:
    def closed(tx: Tx) -> None:
        cursor = tx.raw.cursor()
        cursor.close()
        cursor.execute("SELECT 1")  # psycopg.InterfaceError: the cursor is closed

    with pytest.raises(Unavailable):
        await database.write(closed)
    await database.write(add_user("u1"))
    assert await database.read(user_ids) == ["u1"]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_session_ended_by_the_server_inside_a_read_is_unavailable(
    database: Database,
) -> None:
    def idle_too_long(conn: Connection) -> None:
        # On the driver connection, as store.statements runs reads: SQLAlchemy
        # would recognize the disconnect by itself.
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("SET LOCAL idle_in_transaction_session_timeout = '50ms'")
        time.sleep(0.5)  # the server ends the session: SQLSTATE 25P03 on the next statement
        raw.execute("SELECT 1")

    with pytest.raises(Unavailable):
        await database.read(idle_too_long)
    assert await database.read(user_ids) == []


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_descriptions_never_show_a_password(tmp_path: Path) -> None:
    url = "postgresql://mnemo:s3cret@db.example:5433/mnemo"
    db = open_database(url)
    assert db.dialect == "postgresql"
    assert db.describe() == "postgresql db.example:5433/mnemo"
    assert "s3cret" not in db.url and "db.example:5433" in db.url
    assert describe_url(f"sqlite:///{tmp_path}/x.db") == f"sqlite {tmp_path}/x.db"
    asyncio.run(db.close())


@pytest.mark.parametrize(
    "url",
    ["sqlite://", "sqlite:///:memory:", "mysql://u@h/db", "postgresql+asyncpg://u@h/db"],
)
def test_unsupported_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        open_database(url)


async def test_a_short_read_sees_what_a_write_acknowledged(database: Database) -> None:
    for n in range(5):
        await database.write(add_user(f"u{n}"))
        assert (await database.read(user_ids, short=True))[-1] == f"u{n}"


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_short_read_that_finds_sqlite_busy_goes_to_a_read_lane(database: Database) -> None:
    await database.write(add_user("u1"))
    threads: list[str] = []

    def read(conn: Connection) -> list[str]:
        threads.append(threading.current_thread().name)
        if len(threads) == 1:  # as SQLite answers a connection that may not wait
            raise sqlite3.OperationalError("database is locked")
        return user_ids(conn)

    assert await database.read(read, short=True) == ["u1"]
    assert threads[0] == threading.current_thread().name  # first on the loop's thread
    assert threads[1].startswith("mnemo-read-")  # then in a read lane
