"""The idempotency window through a real server: a retry within the window
answers the first result (and its change cursor); a request_id whose record
is older than ``--idempotency-window-seconds`` is a new request; the same
request_id with another payload is REQUEST_ID_REUSED and writes nothing (no
row, no change); the maintenance task prunes records past the window and
changes past their retention. On every backend.

Records are aged by moving their ``created_at`` back in the database (no
test waits for a clock)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import grpc
import pytest
from sqlalchemy import func, select, update

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from mnemo_server.domain.usecases.maintenance import Retention, prune_once
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.rows import now_micros
from mnemo_server.store.schema import change_cursors, changes, idempotency_records
from mnemo_server.store.transactions.database import open_database
from tests.support.rpc_errors import rpc_failure
from tests.support.server import running_server
from tests.support.user_rows import connected

WINDOW_S = 600
CHAT = "users/alice/conversations/chat"
Stub = conversations_pb2_grpc.ConversationServiceStub


@pytest.fixture
def stub(database_url: str) -> Iterator[Stub]:
    with (
        running_server(database_url, idempotency_window_seconds=WINDOW_S) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield conversations_pb2_grpc.ConversationServiceStub(channel)


def _append(stub: Stub, *texts: str, request_id: str) -> cv.AppendMessagesResponse:
    messages = [
        cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": t})) for t in texts
    ]
    response: cv.AppendMessagesResponse = stub.AppendMessages(
        cv.AppendMessagesRequest(conversation=CHAT, messages=messages, request_id=request_id)
    )
    return response


def _age_records(database_url: str, seconds: float) -> None:
    with connected(database_url) as conn:
        conn.execute(
            update(idempotency_records).values(
                created_at=idempotency_records.c.created_at - int(seconds * 1_000_000)
            )
        )
        conn.commit()


def _counts(database_url: str) -> tuple[int, int, int]:
    """(idempotency records, changes, alice's newest cursor)."""
    with connected(database_url) as conn:
        records = conn.execute(select(func.count()).select_from(idempotency_records)).scalar_one()
        rows = conn.execute(select(func.count()).select_from(changes)).scalar_one()
        latest = conn.execute(
            select(change_cursors.c.last_cursor).where(change_cursors.c.user_id == "alice")
        ).scalar_one_or_none()
    return int(records), int(rows), int(latest or 0)


def test_a_retry_within_the_window_answers_the_first_result(stub: Stub, database_url: str) -> None:
    first = _append(stub, "a", request_id="req-1")
    _age_records(database_url, WINDOW_S - 60)
    retry = _append(stub, "a", request_id="req-1")
    assert retry == first
    assert _counts(database_url) == (1, 2, 2)


def test_a_request_id_older_than_the_window_is_a_new_request(stub: Stub, database_url: str) -> None:
    first = _append(stub, "a", request_id="req-1")
    _age_records(database_url, WINDOW_S + 1)
    later = _append(stub, "a", request_id="req-1")
    assert [m.position for m in first.messages] == [0]
    assert [m.position for m in later.messages] == [1]  # appended again
    assert later.change_cursor > first.change_cursor
    # The new record answers the retries from now on.
    assert _append(stub, "a", request_id="req-1") == later
    assert _counts(database_url)[0] == 1


def test_a_request_id_reused_for_another_payload_writes_nothing(
    stub: Stub, database_url: str
) -> None:
    _append(stub, "a", request_id="req-1")
    before = _counts(database_url)
    failure = rpc_failure(
        stub.AppendMessages,
        cv.AppendMessagesRequest(
            conversation=CHAT,
            messages=[cv.HistoryMessage(message_json='{"role": "user", "content": "b"}')],
            request_id="req-1",
        ),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )
    assert _counts(database_url) == before
    listed = stub.ListMessages(cv.ListMessagesRequest(parent=CHAT))
    assert len(listed.messages) == 1


def test_maintenance_prunes_records_past_the_window_and_old_changes(
    database_url: str, event_loop: asyncio.AbstractEventLoop
) -> None:
    with running_server(database_url) as target, grpc.insecure_channel(target) as channel:
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        for n in range(5):
            _append(stub, f"m{n}", request_id=f"req-{n}")
    with connected(database_url) as conn:
        # The first three requests and their changes (cursors 1..6) are old.
        conn.execute(
            update(idempotency_records)
            .where(idempotency_records.c.request_id.in_(["req-0", "req-1", "req-2"]))
            .values(created_at=now_micros() - 2 * WINDOW_S * 1_000_000)
        )
        conn.execute(
            update(changes)
            .where(changes.c.cursor <= 6)
            .values(created_at=now_micros() - 2 * WINDOW_S * 1_000_000)
        )
        conn.commit()
    retention = Retention(idempotency_window_seconds=WINDOW_S, change_retention_seconds=WINDOW_S)

    async def prune() -> tuple[int, int]:
        db = open_database(database_url)
        try:
            store = SqlStore(db)
            pruned = await prune_once(store, store.feed, retention, batch=2)
            return pruned.idempotency_records, pruned.changes
        finally:
            await db.close()

    assert event_loop.run_until_complete(prune()) == (3, 6)
    with connected(database_url) as conn:
        kept = conn.execute(select(idempotency_records.c.request_id)).scalars().all()
        cursors = conn.execute(select(changes.c.cursor).order_by(changes.c.cursor)).scalars().all()
    assert sorted(kept) == ["req-3", "req-4"]
    assert list(cursors) == [7, 8, 9, 10]
    assert event_loop.run_until_complete(prune()) == (0, 0)
    assert _counts(database_url)[2] == 10  # the counter stays
