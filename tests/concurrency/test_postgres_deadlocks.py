"""PostgreSQL deadlocks through a real server: a deadlock the server's write
runs into is retried inside the server, and one that comes back on every
attempt ends, after the bounded number of attempts, in ``ABORTED
CONCURRENT_MODIFICATION`` with nothing written.

The contention is real: a second connection holds ``changes`` (the change
feed) in SHARE mode (so the server's append, holding the conversation's row
lock after its first statement, waits to append to the feed) and then asks
for that conversation row; PostgreSQL's deadlock detector
aborts the server's transaction, which waited first (the second connection's
own ``deadlock_timeout`` is long, so on a loaded machine its check can never
run first and abort it instead). A savepoint gives the row back so that the
server's next attempt deadlocks the same way. (Not ``messages``: on PostgreSQL
the append's first statement inserts the messages too, and a statement takes
its table locks before any row lock, so it would wait without deadlocking.)"""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from sqlalchemy import Connection, create_engine, select, text

from mnemo.v1 import conversations_pb2 as cv
from mnemo_server.store.schema import conversations
from mnemo_server.store.transactions.database import MAX_ATTEMPTS
from tests.api.history import Stub, all_messages, append, message
from tests.support.rpc_errors import error_details

USER, CONVERSATION_ID = "u1", "contended"
CONVERSATION = f"users/{USER}/conversations/{CONVERSATION_ID}"
WAIT_S = 60.0

pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("backend", ["postgres"], indirect=True)]

_SERVER_WAITS_FOR_THE_FEED = text(
    "SELECT count(*) FROM pg_locks WHERE relation = 'changes'::regclass "
    "AND NOT granted AND pid <> pg_backend_pid()"
)


def _wait_until_the_server_waits(conn: Connection, done: threading.Event) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not done.is_set():
        if conn.execute(_SERVER_WAITS_FOR_THE_FEED).scalar():
            return True
        time.sleep(0.01)
    return False


class Deadlocker(threading.Thread):
    """Holds ``changes`` in SHARE mode and deadlocks each of the server's
    attempts to append, up to ``times``; ``forced`` counts the deadlocks."""

    def __init__(self, database_url: str, times: int) -> None:
        super().__init__(daemon=True)
        self.database_url, self.times = database_url, times
        self.locked, self.done = threading.Event(), threading.Event()
        self.forced = 0
        self.error: BaseException | None = None  # what ended it early, for the failure message

    def run(self) -> None:
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as conn, conn.begin():
                conn.execute(text("SET LOCAL deadlock_timeout = '30s'"))
                conn.execute(text("LOCK TABLE changes IN SHARE MODE"))
                self.locked.set()
                row = (
                    select(conversations.c.id)
                    .where(conversations.c.user_id == USER)
                    .where(conversations.c.conversation_id == CONVERSATION_ID)
                    .with_for_update()
                )
                while self.forced < self.times and _wait_until_the_server_waits(conn, self.done):
                    savepoint = conn.begin_nested()
                    conn.execute(row)  # waits for the server's row lock: a deadlock
                    savepoint.rollback()  # gives the row back for the next attempt
                    self.forced += 1
        except BaseException as error:
            self.error = error
            raise
        finally:
            self.locked.set()
            engine.dispose()


def _append_while_deadlocked(
    conversations_stub: Stub, database_url: str, times: int
) -> tuple[str, int]:
    """Append one message while every attempt (up to ``times``) deadlocks;
    returns ``"OK"`` or ``"CODE REASON"`` and the number of deadlocks."""
    deadlocker = Deadlocker(database_url, times)
    deadlocker.start()
    assert deadlocker.locked.wait(WAIT_S)
    try:
        conversations_stub.AppendMessages(
            cv.AppendMessagesRequest(conversation=CONVERSATION, messages=[message("second")]),
            timeout=WAIT_S,
        )
        outcome = "OK"
    except grpc.RpcError as error:
        details = error_details(error)
        outcome = f"{details.code.name} {details.reason}"
    finally:
        deadlocker.done.set()
    deadlocker.join(WAIT_S)
    assert not deadlocker.is_alive()
    assert deadlocker.error is None, f"the deadlocking connection failed: {deadlocker.error!r}"
    return outcome, deadlocker.forced


def test_a_deadlock_is_retried_inside_the_server(conversations: Stub, database_url: str) -> None:
    append(conversations, CONVERSATION, "first")
    assert _append_while_deadlocked(conversations, database_url, 1) == ("OK", 1)
    assert [m.position for m in all_messages(conversations, CONVERSATION)] == [0, 1]


def test_deadlocks_on_every_attempt_end_in_aborted_and_write_nothing(
    conversations: Stub, database_url: str
) -> None:
    append(conversations, CONVERSATION, "first")
    outcome = _append_while_deadlocked(conversations, database_url, MAX_ATTEMPTS + 1)
    assert outcome == ("ABORTED CONCURRENT_MODIFICATION", MAX_ATTEMPTS)
    assert [m.position for m in all_messages(conversations, CONVERSATION)] == [0]
    append(conversations, CONVERSATION, "again")  # the contention is gone
    assert [m.position for m in all_messages(conversations, CONVERSATION)] == [0, 1]
