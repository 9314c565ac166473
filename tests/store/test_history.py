"""History conformance (ConversationStore): appends, idempotency, concurrency,
listing, streaming, clearing and failed runs, on every backend."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any

import pytest

from mnemo_server.domain.errors import Aborted, FailedPrecondition, NotFound
from mnemo_server.domain.models import (
    AppendResult,
    ConversationKey,
    FailedRun,
    NewMessage,
    RunError,
    StoredMessage,
)
from mnemo_server.domain.usecases.conversations import Conversations
from mnemo_server.store.composed import SqlStore
from tests.store.samples import idem, message, messages
from tests.store.writes import (
    append_messages,
    clear_messages,
    delete_conversation,
    pop_messages,
    record_failed_run,
    replace_history_prefix,
)


async def append(
    history: SqlStore,
    new: Sequence[NewMessage],
    *,
    conversation_id: str = "c1",
    run_id: str = "run-1",
    **options: Any,
) -> AppendResult:
    """Append to alice's ``conversation_id``, created with metadata if new
    (``options``: those of ``append_messages``)."""
    return await append_messages(
        history,
        "alice",
        conversation_id,
        new,
        run_id=run_id,
        create_metadata={"source": "test"},
        **options,
    )


async def all_messages(history: SqlStore, conversation_id: str = "c1") -> list[str]:
    page = await history.conversations.list_messages(
        "alice", conversation_id, start_position=0, limit=10_000
    )
    return [m.message_json for m in page.items]


async def test_appends_take_dense_positions_and_keep_messages_verbatim(
    history: SqlStore,
) -> None:
    first = await append(history, messages("a", "b"), run_id="run-1", turn=1)
    second = await append(history, messages("c"), run_id="run-2", turn=2)
    assert [m.position for m in first.messages] == [0, 1]
    assert [m.position for m in second.messages] == [2]
    assert second.conversation.message_count == 3
    assert first.conversation.metadata == {"source": "test"}  # created by the append
    assert second.conversation.etag != first.conversation.etag

    page = await history.conversations.list_messages("alice", "c1", start_position=0, limit=10)
    assert page.items == first.messages + second.messages
    stored = page.items[2]
    assert (stored.run_id, stored.turn, stored.role, stored.text) == ("run-2", 2, "user", "c")
    assert stored.message_json == message("c").message_json  # byte for byte
    assert not stored.compacted


async def test_a_wrong_expected_position_is_aborted_and_writes_nothing(
    history: SqlStore,
) -> None:
    await append(history, messages("a", "b"), expected_position=0)
    with pytest.raises(Aborted) as caught:
        await append(history, messages("c"), expected_position=1)
    assert caught.value.reason == "POSITION_MISMATCH"
    assert dict(caught.value.metadata) == {"expected_position": "1", "next_position": "2"}
    assert len(await all_messages(history)) == 2
    await append(history, messages("c"), expected_position=2)
    assert len(await all_messages(history)) == 3


async def test_a_retried_append_returns_the_first_result_and_writes_nothing(
    history: SqlStore,
) -> None:
    first = await append(history, messages("a"), idempotency=idem("req-1"))
    await append(history, messages("b"))
    again = await append(history, messages("a"), idempotency=idem("req-1"))
    assert again == first
    assert len(await all_messages(history)) == 2
    assert (await history.conversations.get_conversation("alice", "c1")).message_count == 2


async def test_a_request_id_reused_with_another_request_is_refused(
    history: SqlStore,
) -> None:
    await append(history, messages("a"), idempotency=idem("req-1", "fp-a"))
    with pytest.raises(FailedPrecondition) as caught:
        await append(history, messages("b"), idempotency=idem("req-1", "fp-b"))
    assert caught.value.reason == "REQUEST_ID_REUSED"
    with pytest.raises(FailedPrecondition):
        await append(history, messages("a"), idempotency=idem("req-1", "fp-a", "OtherRpc"))
    assert len(await all_messages(history)) == 1


async def test_a_failed_append_records_no_result(history: SqlStore) -> None:
    await append(history, messages("a"))
    with pytest.raises(Aborted):
        await append(history, messages("b"), expected_position=5, idempotency=idem("req-1"))
    # The same request id later succeeds: nothing was recorded for it.
    result = await append(history, messages("b"), expected_position=1, idempotency=idem("req-1"))
    assert [m.position for m in result.messages] == [1]


@pytest.mark.timeout(180)
async def test_concurrent_appends_with_retries_leave_dense_positions(
    history: SqlStore,
) -> None:
    writers, per_writer = 8, 50
    rng = random.Random(42)

    async def writer(w: int) -> None:
        for i in range(per_writer):
            key = idem(f"w{w}-{i}")
            text = f"w{w}-{i}"
            result = await append(history, [message(text)], idempotency=key)
            if rng.random() < 0.1:  # the client did not see the answer: retry
                assert await append(history, [message(text)], idempotency=key) == result

    await asyncio.gather(*(writer(w) for w in range(writers)))

    page = await history.conversations.list_messages("alice", "c1", start_position=0, limit=10_000)
    assert [m.position for m in page.items] == list(range(writers * per_writer))
    expected = {f"w{w}-{i}" for w in range(writers) for i in range(per_writer)}
    assert sorted(m.text for m in page.items) == sorted(expected)
    conversation = await history.conversations.get_conversation("alice", "c1")
    assert conversation.message_count == writers * per_writer


async def test_concurrent_first_appends_create_the_conversation_once(
    history: SqlStore,
) -> None:
    results = await asyncio.gather(
        *(append(history, messages(f"m{n}"), conversation_id="new") for n in range(8))
    )
    positions = sorted(m.position for r in results for m in r.messages)
    assert positions == list(range(8))
    page = await history.conversations.list_conversations("alice", limit=10, after=None)
    assert [c.conversation_id for c in page.items] == ["new"]


async def test_list_messages_pages_from_a_start_position(history: SqlStore) -> None:
    await append(history, messages(*"abcdefg"))
    first = await history.conversations.list_messages("alice", "c1", start_position=0, limit=3)
    assert [m.text for m in first.items] == ["a", "b", "c"]
    assert first.next_after == (2,)
    second = await history.conversations.list_messages("alice", "c1", start_position=3, limit=3)
    assert [m.text for m in second.items] == ["d", "e", "f"]
    last = await history.conversations.list_messages("alice", "c1", start_position=6, limit=3)
    assert [m.text for m in last.items] == ["g"] and last.next_after is None
    exact = await history.conversations.list_messages("alice", "c1", start_position=4, limit=3)
    assert [m.text for m in exact.items] == ["e", "f", "g"] and exact.next_after is None
    beyond = await history.conversations.list_messages("alice", "c1", start_position=50, limit=3)
    assert beyond.items == ()
    with pytest.raises(NotFound):
        await history.conversations.list_messages("alice", "nope", start_position=0, limit=3)


async def test_clear_restarts_positions_and_changes_the_revision(
    history: SqlStore,
) -> None:
    await append(history, messages("a", "b"))
    await record_failed_run(history, "alice", "c1", run_id="bad", error=RunError("boom"))
    before = await history.conversations.snapshot_history("alice", "c1")
    cleared = await clear_messages(history, "alice", "c1")
    assert cleared.message_count == 0
    assert await all_messages(history) == []
    after = await history.conversations.snapshot_history("alice", "c1")
    assert after.messages == () and after.revision != before.revision
    again = await append(history, messages("c"), expected_position=0)
    assert [m.position for m in again.messages] == [0]
    # Failed runs are not part of the history: a clear keeps them.
    runs = await history.conversations.list_failed_runs("alice", "c1", limit=10, after=None)
    assert [r.run_id for r in runs.items] == ["bad"]
    with pytest.raises(NotFound):
        await clear_messages(history, "alice", "nope")


async def test_failed_runs_are_kept_apart_from_the_history(history: SqlStore) -> None:
    await append(history, messages("a"))
    error = RunError(message="model timed out", code="TIMEOUT", details_json='{"after_s": 30}')
    failed = await record_failed_run(
        history,
        "alice",
        "c1",
        run_id="run-9",
        error=error,
        messages=messages("partial 1", "partial 2"),
    )
    assert failed.failed_run_id != "" and failed.run_id == "run-9" and failed.error == error
    assert [m.text for m in failed.messages] == ["partial 1", "partial 2"]
    assert [m.message_json for m in failed.messages] == [
        m.message_json for m in messages("partial 1", "partial 2")
    ]
    assert await all_messages(history) == [message("a").message_json]
    assert (await history.conversations.get_conversation("alice", "c1")).message_count == 1
    listed = await history.conversations.list_failed_runs("alice", "c1", limit=10, after=None)
    assert listed.items == (failed,)


async def test_failed_runs_list_newest_first_in_pages(history: SqlStore) -> None:
    for n in range(5):
        await record_failed_run(history, "alice", "c1", run_id=f"run-{n}", error=RunError("x"))
    seen: list[str] = []
    after = None
    while True:
        page = await history.conversations.list_failed_runs("alice", "c1", limit=2, after=after)
        seen += [r.run_id for r in page.items]
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == [f"run-{n}" for n in reversed(range(5))]
    with pytest.raises(NotFound):
        await history.conversations.list_failed_runs("alice", "nope", limit=2, after=None)


async def test_a_retried_failed_run_is_recorded_once(history: SqlStore) -> None:
    key = idem("fail-1", scope="RecordFailedRun")

    def record() -> Awaitable[FailedRun]:
        return record_failed_run(
            history,
            "alice",
            "c1",
            run_id="r",
            error=RunError("x"),
            messages=messages("p"),
            idempotency=key,
        )

    first = await record()
    again = await record()
    assert again == first
    listed = await history.conversations.list_failed_runs("alice", "c1", limit=10, after=None)
    assert listed.items == (first,)


async def test_a_pop_removes_the_tail_once_and_keeps_the_rest(history: SqlStore) -> None:
    await append(history, messages("a", "b", "c"))
    popped = await pop_messages(history, "alice", "c1", 2, idempotency=idem("pop-1"))
    assert [m.text for m in popped.messages] == ["b", "c"]
    assert popped.conversation.message_count == 1
    again = await pop_messages(history, "alice", "c1", 2, idempotency=idem("pop-1"))
    assert again == popped  # the recorded result, nothing popped twice
    with pytest.raises(Aborted) as mismatch:
        await pop_messages(history, "alice", "c1", 1, expected_next_position=3)
    assert mismatch.value.reason == "POSITION_MISMATCH"
    page = await history.conversations.list_messages("alice", "c1", start_position=0, limit=10)
    assert [m.text for m in page.items] == ["a"]
    assert (await history.conversations.get_message("alice", "c1", 0)).text == "a"
    with pytest.raises(NotFound):
        await history.conversations.get_message("alice", "c1", 1)
    with pytest.raises(NotFound):
        await pop_messages(history, "alice", "nope", 1)


# ------------------------------------------- streaming: one view of the history


def stream(history: SqlStore, batch_size: int = 2) -> AsyncIterator[tuple[StoredMessage, ...]]:
    """alice's c1 streamed through the use case, ``batch_size`` per batch."""
    return Conversations(history.conversations).stream_messages(
        ConversationKey("alice", "c1"), start_position=0, batch_size=batch_size
    )


async def test_appends_and_compaction_between_batches_do_not_reach_a_stream(
    history: SqlStore,
) -> None:
    await append(history, messages("a", "b", "c", "d", "e"))
    batches = stream(history)
    first = await anext(batches)
    await append(history, messages("f", "g"))
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    await replace_history_prefix(
        history, "alice", "c1", revision=snapshot.revision, message_count=4
    )
    rest = [batch async for batch in batches]
    assert [[m.text for m in batch] for batch in [first, *rest]] == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize("rewrite", ["clear", "delete", "pop"])
async def test_a_stream_never_mixes_two_histories(history: SqlStore, rewrite: str) -> None:
    await append(history, messages("a", "b", "c", "d", "e"))
    batches = stream(history)
    assert [m.text for m in await anext(batches)] == ["a", "b"]
    if rewrite == "clear":
        await clear_messages(history, "alice", "c1")
        await append(history, messages("v", "w", "x", "y", "z"))  # the same positions again
    elif rewrite == "delete":
        await delete_conversation(history, "alice", "c1")
        await append(history, messages("v", "w", "x", "y", "z"))
    else:
        await pop_messages(history, "alice", "c1", 3)
        await append(history, messages("x", "y", "z"))
    with pytest.raises(Aborted) as rewritten:
        await anext(batches)
    assert rewritten.value.reason == "CONCURRENT_MODIFICATION"
    assert rewritten.value.metadata == {"name": "users/alice/conversations/c1"}
    again = [m.text async for batch in stream(history) for m in batch]
    assert again == (["a", "b", "x", "y", "z"] if rewrite == "pop" else ["v", "w", "x", "y", "z"])
