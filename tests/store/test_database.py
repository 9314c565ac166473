"""The transaction helper (``Database``): retries, rollbacks, error
translation, SQLite settings, both runners, on every backend where it
applies."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Connection, exc, insert, select

from mnemo_server.domain.errors import Aborted, NotFound, Unavailable
from mnemo_server.store import engines
from mnemo_server.store.database import (
    MAX_ATTEMPTS,
    Database,
    RetryTransaction,
    create_sync_engine,
    describe_url,
    open_database,
)
from mnemo_server.store.schema import users


def add_user(user_id: str) -> Callable[[Connection], None]:
    def work(conn: Connection) -> None:
        conn.execute(insert(users).values(user_id=user_id, created_at=0))

    return work


def user_ids(conn: Connection) -> list[str]:
    return list(conn.execute(select(users.c.user_id).order_by(users.c.user_id)).scalars())


async def test_both_runners_read_and_write(runner_database: Database) -> None:
    await runner_database.write(add_user("u1"))
    assert await runner_database.read(user_ids) == ["u1"]


async def test_a_domain_error_rolls_the_transaction_back(database: Database) -> None:
    def work(conn: Connection) -> None:
        add_user("u1")(conn)
        raise NotFound("not there")

    with pytest.raises(NotFound):
        await database.write(work)
    assert await database.read(user_ids) == []


async def test_a_requested_retry_runs_the_work_again_and_keeps_only_the_last_run(
    database: Database,
) -> None:
    attempts: list[int] = []

    def work(conn: Connection) -> int:
        attempts.append(len(attempts) + 1)
        add_user(f"attempt-{len(attempts)}")(conn)
        if len(attempts) < 3:
            raise RetryTransaction("again")
        return len(attempts)

    assert await database.write(work) == 3
    assert await database.read(user_ids) == ["attempt-3"]


async def test_retries_are_bounded_then_aborted(database: Database) -> None:
    attempts = 0

    def work(conn: Connection) -> None:
        nonlocal attempts
        attempts += 1
        raise RetryTransaction("always")

    with pytest.raises(Aborted) as caught:
        await database.write(work)
    assert caught.value.reason == "CONCURRENT_MODIFICATION"
    assert attempts == MAX_ATTEMPTS


async def test_all_statements_of_a_read_see_one_snapshot(
    runner_database: Database, database_url: str
) -> None:
    other = create_sync_engine(database_url, pool_size=1)

    def read_around_a_commit(conn: Connection) -> tuple[list[str], list[str]]:
        before = user_ids(conn)
        with other.begin() as writer:  # another client commits meanwhile
            add_user("u2")(writer)
        return before, user_ids(conn)

    await runner_database.write(add_user("u1"))
    try:
        assert await runner_database.read(read_around_a_commit) == (["u1"], ["u1"])
        assert await runner_database.read(user_ids) == ["u1", "u2"]
    finally:
        other.dispose()


async def test_a_cancelled_write_still_finishes_its_transaction(database: Database) -> None:
    started, proceed = threading.Event(), threading.Event()

    def work(conn: Connection) -> None:
        started.set()
        proceed.wait(timeout=30)
        add_user("u1")(conn)

    task = asyncio.ensure_future(database.write(work))
    await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
    task.cancel()
    await asyncio.sleep(0)  # let the cancellation reach the write
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await database.read(user_ids) == ["u1"]


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_reads_are_read_only_on_postgresql(database: Database) -> None:
    with pytest.raises(exc.DBAPIError) as caught:
        await database.read(add_user("u1"))
    assert "read-only" in str(caught.value)


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_deadlock_is_retried_on_postgresql(database: Database) -> None:
    await database.write(add_user("a"))
    await database.write(add_user("b"))
    barrier = threading.Barrier(2, timeout=30)
    attempts = {"ab": 0, "ba": 0}

    def lock_in_order(first: str, second: str) -> Callable[[Connection], str]:
        def work(conn: Connection) -> str:
            attempts[first + second] += 1
            lock = select(users.c.user_id).where(users.c.user_id == first).with_for_update()
            conn.execute(lock)
            if attempts[first + second] == 1:
                barrier.wait()  # both hold their first lock: each now waits for the other
            conn.execute(select(users.c.user_id).where(users.c.user_id == second).with_for_update())
            return first + second

        return work

    results = await asyncio.gather(
        database.write(lock_in_order("a", "b")), database.write(lock_in_order("b", "a"))
    )
    assert sorted(results) == ["ab", "ba"]
    assert sorted(attempts.values()) == [1, 2]  # PostgreSQL broke the deadlock once


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_settings(database: Database) -> None:
    def pragmas(conn: Connection) -> list[object]:
        names = ["journal_mode", "foreign_keys", "synchronous", "busy_timeout"]
        return [conn.exec_driver_sql(f"PRAGMA {name}").scalar() for name in names]

    assert await database.read(pragmas) == ["wal", 1, 2, engines.SQLITE_BUSY_TIMEOUT_MS]


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
