"""PostgreSQL faults under a write load, through a real server: the cluster
restarted (``pg_ctl -m fast`` and ``-m immediate``), every backend of the
server killed (``pg_terminate_backend``), and one write's backend killed
while its transaction is open.

What must hold each time: the server keeps serving; callers see
``UNAVAILABLE`` (retried with their request ids) and then success, never
``INTERNAL``; every acknowledged write is stored exactly once
(``tests.concurrency.load``); and the change feed's watchers, a raw
``WatchChanges`` loop and the Python ``ChangeFollower``, resume after the
fault and receive every change once, in order, without ever seeing
``INTERNAL``.

The faults need a cluster of their own (restarting the session's shared one
would break the other tests' connections): one per module, a fresh database
per test.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import grpc
import psycopg
import pytest

from mnemo.client import Change, ChangeFollower, MnemoClient
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import sync_pb2_grpc
from tests.concurrency.load import USER, WriteLoad, feed_cursors, write_load
from tests.support.databases import PostgresDatabases
from tests.support.pgcluster import URL_ENV, ThrowawayPostgres, libpq_url
from tests.support.rpc_errors import error_details
from tests.support.server import running_server

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        bool(os.environ.get(URL_ENV)),
        reason=f"restarts its own PostgreSQL cluster, which ${URL_ENV} replaces",
    ),
]

WAIT_S = 60.0
ACKS_BEFORE = 100
"""Writes acknowledged before a fault, and again after it."""
RESUMABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
}


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[tuple[ThrowawayPostgres, PostgresDatabases]]:
    """A cluster of this module's own, and fresh migrated databases on it.
    ``synchronous_commit`` is on: an immediate shutdown must not lose
    acknowledged commits (the shared test clusters turn it off for speed)."""
    with ThrowawayPostgres(settings={"synchronous_commit": "on"}) as cluster:
        databases = PostgresDatabases(cluster.url)
        yield cluster, databases
        databases.close()


@pytest.fixture
def own_postgres(own_cluster: tuple[ThrowawayPostgres, PostgresDatabases]) -> ThrowawayPostgres:
    return own_cluster[0]


@pytest.fixture
def fault_url(own_cluster: tuple[ThrowawayPostgres, PostgresDatabases]) -> Iterator[str]:
    databases = own_cluster[1]
    url = databases.fresh()
    yield url
    databases.drop(url)


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(libpq_url(url), autocommit=True)


def _kill_other_backends(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """Terminate every other client backend of ``conn``'s database (the
    server's lanes and its LISTEN connection); how many."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend'"
    ).fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class Seen:
    """What the callers saw: failed attempts by code (each retried until
    acknowledged), acknowledged writes, and how the raw watch's calls ended."""

    attempts: Counter[str]
    acknowledged: int
    raw_ends: Counter[str]


class RawWatcher(threading.Thread):
    """A ``WatchChanges`` loop that resumes from its last cursor after a
    resumable end (counted in ``ends``); any other end is recorded in
    ``fatal`` and ends the loop."""

    def __init__(self, target: str) -> None:
        super().__init__(name="raw-watcher", daemon=True)
        self.target = target
        self.cursors: list[int] = []
        self.ends: Counter[str] = Counter()
        self.fatal: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with grpc.insecure_channel(self.target) as channel:
            stub = sync_pb2_grpc.SyncServiceStub(channel)
            while not self.stop.is_set():
                after = self.cursors[-1] if self.cursors else 0
                call = stub.WatchChanges(
                    sy.WatchChangesRequest(parent=USER, after_cursor=after), timeout=5.0
                )
                try:
                    for event in call:
                        if event.HasField("change"):
                            self.cursors.append(event.change.cursor)
                        if self.stop.is_set():
                            call.cancel()
                            return
                    self.ends["OK"] += 1
                except grpc.RpcError as error:
                    details = error_details(error)
                    self.ends[details.code.name] += 1
                    if details.code not in RESUMABLE:
                        self.fatal.append(
                            f"{details.code.name} {details.reason}: {details.message}"
                        )
                        return
                time.sleep(0.05)


class FollowerThread(threading.Thread):
    """The Python ``ChangeFollower`` of ``USER``, iterated until ``stop``."""

    def __init__(self, target: str) -> None:
        super().__init__(name="follower", daemon=True)
        self.client = MnemoClient(target)
        self.follower = ChangeFollower(
            self.client, USER.removeprefix("users/"), watch_timeout=5.0, max_backoff=0.5
        )
        self.cursors: list[int] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            for event in self.follower:
                if isinstance(event, Change):
                    self.cursors.append(event.cursor)
                if self.stop.is_set():
                    return
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            self.client.close()


def _end_of(watcher: RawWatcher | FollowerThread) -> str:
    if isinstance(watcher, RawWatcher):
        return f"{watcher.fatal}, after {dict(watcher.ends)}"
    return repr(watcher.error)


def _wait_for(cursor: int, *watchers: RawWatcher | FollowerThread) -> None:
    deadline = time.monotonic() + WAIT_S
    for watcher in watchers:
        while not watcher.cursors or watcher.cursors[-1] < cursor:
            assert watcher.is_alive(), f"{watcher.name} stopped: {_end_of(watcher)}"
            assert time.monotonic() < deadline, f"{watcher.name} stalled at {watcher.cursors[-1:]}"
            time.sleep(0.02)


def _under_load(url: str, fault: Callable[[WriteLoad], None]) -> Seen:
    """Run the write load and both watchers, apply ``fault`` once
    ``ACKS_BEFORE`` writes are acknowledged, go on for as many again, then
    check everything; what the callers and watchers saw."""
    with running_server(url, watch_heartbeat_seconds=0.5) as target:
        raw, follower = RawWatcher(target), FollowerThread(target)
        raw.start()
        follower.start()
        with write_load(lambda: target, appenders=3, rememberers=1, creators=1) as load:
            load.wait_for_more(ACKS_BEFORE, WAIT_S)
            fault(load)
            load.wait_for_more(ACKS_BEFORE, WAIT_S)
            load.finish()
            load.check(target)
        with grpc.insecure_channel(target) as channel:
            feed = feed_cursors(channel)
        _wait_for(feed[-1], raw, follower)
        for watcher in (raw, follower):
            watcher.stop.set()
        raw.join(WAIT_S)
        follower.join(WAIT_S)
        seen = Seen(load.failed_attempts(), load.acknowledged(), raw.ends)
        assert raw.fatal == [], seen
        assert follower.error is None, (repr(follower.error), seen)
        assert "INTERNAL" not in raw.ends
        # No gap, no duplicate: the watchers saw the feed exactly.
        assert raw.cursors[: len(feed)] == feed
        assert follower.cursors[: len(feed)] == feed
        return seen


def _listen_pid(conn: psycopg.Connection[tuple[object, ...]]) -> int | None:
    """The backend of the server's LISTEN connection, if it is connected."""
    row = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'mnemo-listen'"
    ).fetchone()
    return None if row is None else int(str(row[0]))


def _listening_again(url: str, before: int | None) -> int:
    """Wait until the LISTEN connection is back on another backend than ``before``."""
    deadline = time.monotonic() + WAIT_S
    with _admin(url) as conn:
        while (pid := _listen_pid(conn)) is None or pid == before:
            assert time.monotonic() < deadline, "the LISTEN connection did not come back"
            time.sleep(0.05)
    return pid


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_postgres_restart_under_load(
    own_postgres: ThrowawayPostgres, fault_url: str, mode: str
) -> None:
    """``fast`` comes straight back; ``immediate`` (a crash: recovery from WAL
    at the next start) stays down until callers have been answered
    UNAVAILABLE a few times."""
    listening: list[int | None] = []

    def restart(load: WriteLoad) -> None:
        with _admin(fault_url) as conn:
            listening.append(_listen_pid(conn))
        own_postgres.shut_down(mode)
        if mode == "immediate":
            unavailable = load.failed_attempts()["UNAVAILABLE"]
            deadline = time.monotonic() + WAIT_S
            while load.failed_attempts()["UNAVAILABLE"] < unavailable + 5:
                assert time.monotonic() < deadline, "no caller was told UNAVAILABLE"
                time.sleep(0.02)
        own_postgres.start_again()
        listening.append(_listening_again(fault_url, listening[0]))

    seen = _under_load(fault_url, restart)
    assert listening[0] is not None and listening[1] != listening[0]
    if mode == "immediate":
        assert seen.attempts["UNAVAILABLE"] >= 5


def test_backends_killed_under_load(fault_url: str) -> None:
    """Every backend of the server (write and read lanes, the LISTEN
    connection) killed three times, then those running a statement or inside
    a transaction killed again and again at random moments."""
    rng = random.Random(7)

    def kill(load: WriteLoad) -> None:
        with _admin(fault_url) as conn:
            for _ in range(3):
                before = _listen_pid(conn)
                assert _kill_other_backends(conn) > 0
                _listening_again(fault_url, before)
                load.wait_for_more(20, WAIT_S)
            for _ in range(40):
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend' AND state <> 'idle'"
                )
                time.sleep(rng.uniform(0.0, 0.03))

    _under_load(fault_url, kill)


_WAITING_FOR_MESSAGES = (
    "SELECT pid FROM pg_locks WHERE relation = 'messages'::regclass "
    "AND NOT granted AND pid <> pg_backend_pid()"
)


def test_a_backend_killed_in_the_middle_of_a_transaction(fault_url: str) -> None:
    """The server's append waits, inside its transaction (other writes of its
    batch done in their savepoints), for a lock this test holds; its backend
    is killed there, three times."""
    killed: list[int] = []

    def kill_in_transaction(load: WriteLoad) -> None:
        with _admin(fault_url) as killer, _admin(fault_url) as locker:
            for _ in range(3):
                with locker.transaction():
                    locker.execute("LOCK TABLE messages IN SHARE MODE")
                    deadline = time.monotonic() + WAIT_S
                    while not (waiting := killer.execute(_WAITING_FOR_MESSAGES).fetchall()):
                        assert time.monotonic() < deadline, "no write waited for the lock"
                        time.sleep(0.005)
                    for (pid,) in waiting:
                        row = killer.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
                        killed.append(int(bool(row and row[0])))
                load.wait_for_more(20, WAIT_S)

    seen = _under_load(fault_url, kill_in_transaction)
    assert sum(killed) >= 3
    # The killed transactions' callers were told UNAVAILABLE (or their call
    # timed out waiting) and retried: nothing else.
    assert set(seen.attempts) <= {"UNAVAILABLE", "DEADLINE_EXCEEDED"}
