"""Deadlines of writes, through a real server on PostgreSQL (where the test
can see, in ``pg_locks``, that a write is running and waiting).

- A call whose deadline expires while it is queued for the writer (the one
  write lane is busy) is dropped before it starts: it never commits, and a
  retry with its ``request_id`` writes it once.
- A call whose deadline expires while its transaction runs is not stopped
  half way: its transaction ends as it would have (committed when what it
  waited for goes away, rolled back when its connection is killed), never
  half of it; a retry with the same ``request_id`` returns the committed
  result or writes it, once either way.

The write is made to wait by a lock this test holds on ``messages``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import grpc
import psycopg
import pytest

from mnemo.v1 import conversations_pb2 as cv
from tests.api.history import Stub, all_messages, append, contents, message
from tests.support.pgcluster import libpq_url
from tests.support.rpc_errors import error_details

pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("backend", ["postgres"], indirect=True)]

CONVERSATION = "users/u1/conversations/deadlines"
WAIT_S = 30.0
SHORT_S = 0.5
"""The deadline that expires while the write waits."""
CANCEL_SLACK_S = 1.0
"""After the caller saw its deadline pass, how long the lock is still held, so
that the server, which enforces the same deadline, has cancelled the call."""

_WAITING = (
    "SELECT pid FROM pg_locks WHERE relation = 'messages'::regclass "
    "AND NOT granted AND pid <> pg_backend_pid()"
)


class Lock:
    """``LOCK TABLE messages IN SHARE MODE`` on a connection of the test's:
    the server's appends wait for it inside their transactions."""

    def __init__(self, database_url: str) -> None:
        self._url = libpq_url(database_url)
        self._conn = psycopg.connect(self._url)
        self._conn.execute("LOCK TABLE messages IN SHARE MODE")
        self._observer = psycopg.connect(self._url, autocommit=True)

    def waiting(self) -> list[int]:
        """The backends waiting for the lock (a write running in the lane)."""
        return [int(str(row[0])) for row in self._observer.execute(_WAITING).fetchall()]

    def wait_for_a_waiter(self) -> int:
        deadline = time.monotonic() + WAIT_S
        while not (pids := self.waiting()):
            assert time.monotonic() < deadline, "no write waited for the lock"
            time.sleep(0.005)
        return pids[0]

    def kill(self, pid: int) -> None:
        self._observer.execute("SELECT pg_terminate_backend(%s::integer)", (pid,))

    def release(self) -> None:
        self._conn.rollback()

    def close(self) -> None:
        self._conn.close()
        self._observer.close()


@pytest.fixture
def lock(database_url: str, conversations: Stub) -> Iterator[Lock]:
    append(conversations, CONVERSATION, "first")  # the conversation exists
    held = Lock(database_url)
    try:
        yield held
    finally:
        held.close()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def _append(stub: Stub, request_id: str, timeout: float, *texts: str) -> cv.AppendMessagesResponse:
    request = cv.AppendMessagesRequest(
        conversation=CONVERSATION, messages=[message(t) for t in texts], request_id=request_id
    )
    response: cv.AppendMessagesResponse = stub.AppendMessages(request, timeout=timeout)
    return response


def _deadline_passes(stub: Stub, request_id: str, *texts: str) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        _append(stub, request_id, SHORT_S, *texts)
    assert error_details(raised.value).code is grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(CANCEL_SLACK_S)


def _stored(stub: Stub) -> list[str]:
    return [str(text) for text in contents(all_messages(stub, CONVERSATION))]


def test_a_write_whose_deadline_passes_while_it_waits_for_the_writer_never_commits(
    conversations: Stub, lock: Lock, pool: ThreadPoolExecutor
) -> None:
    running: Future[cv.AppendMessagesResponse] = pool.submit(
        _append, conversations, "running", WAIT_S, "running"
    )
    lock.wait_for_a_waiter()  # the write lane is busy with it
    _deadline_passes(conversations, "queued", "queued 0", "queued 1")
    assert len(lock.waiting()) == 1  # the queued write never started
    lock.release()
    assert contents(list(running.result(WAIT_S).messages)) == ["running"]
    append(conversations, CONVERSATION, "later")  # the lane has moved past it
    assert _stored(conversations) == ["first", "running", "later"]
    retried = _append(conversations, "queued", WAIT_S, "queued 0", "queued 1")
    assert [m.position for m in retried.messages] == [3, 4]
    assert _stored(conversations) == ["first", "running", "later", "queued 0", "queued 1"]


@pytest.mark.parametrize("ending", ["committed", "rolled back"])
def test_a_write_whose_deadline_passes_while_it_runs_is_all_or_nothing(
    conversations: Stub, lock: Lock, pool: ThreadPoolExecutor, ending: str
) -> None:
    late = pool.submit(_deadline_passes, conversations, "late", "late 0", "late 1")
    pid = lock.wait_for_a_waiter()  # its transaction runs, and waits
    late.result(WAIT_S)
    assert lock.waiting() == [pid]  # still running after the caller gave up
    if ending == "committed":
        lock.release()  # what it waited for goes away: it goes on and commits
    else:
        lock.kill(pid)  # its connection dies: it rolls back
        lock.release()
    append(conversations, CONVERSATION, "later")  # after the late write ended
    first = _stored(conversations)
    if ending == "committed":
        assert first == ["first", "late 0", "late 1", "later"]
    else:
        assert first == ["first", "later"]
    retried = _append(conversations, "late", WAIT_S, "late 0", "late 1")
    positions = [m.position for m in retried.messages]
    # Committed: the retry returns the first result; rolled back: it writes once.
    assert positions == ([1, 2] if ending == "committed" else [2, 3])
    assert sorted(_stored(conversations)) == sorted(["first", "late 0", "late 1", "later"])
