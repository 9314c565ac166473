"""Conversation conformance (ConversationStore): create, get, list, update,
delete, on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo_server.domain.errors import Aborted, AlreadyExists, NotFound
from mnemo_server.domain.models import ConversationKey, MemoryState, RunError
from mnemo_server.store.composed import SqlStore
from tests.store.samples import exchange, idem, messages
from tests.store.writes import (
    append_messages,
    create_conversation,
    delete_conversation,
    record_failed_run,
    replace_history_prefix,
    save_state,
    update_conversation,
)

METADATA = {"title": "Voyage à Paris", "tags": ["a", "b"], "nested": {"n": 1, "x": None}}


async def create(history: SqlStore, conversation_id: str, user_id: str = "alice") -> None:
    await create_conversation(history, user_id, conversation_id)


async def test_create_then_get(history: SqlStore) -> None:
    created = await create_conversation(history, "alice", "c1", metadata=METADATA)
    assert (created.user_id, created.conversation_id) == ("alice", "c1")
    assert created.metadata == METADATA
    assert created.message_count == 0
    assert created.etag != ""
    assert created.create_time is not None and created.create_time == created.update_time
    assert created.expire_time is None
    assert await history.conversations.get_conversation("alice", "c1") == created


async def test_create_refuses_a_taken_id_unless_it_is_a_retry(history: SqlStore) -> None:
    key = idem("create-1", scope="CreateConversation")
    first = await create_conversation(history, "alice", "c1", metadata=METADATA, idempotency=key)
    again = await create_conversation(history, "alice", "c1", metadata=METADATA, idempotency=key)
    assert again == first
    with pytest.raises(AlreadyExists):
        await create(history, "c1")
    # Another user's conversation of the same id is another conversation.
    await create(history, "c1", user_id="bob")


async def test_a_temporary_conversation_expires_after_the_ttl(
    history: SqlStore,
) -> None:
    lifetime = timedelta(hours=2)
    temporary = await create_conversation(
        history, "alice", "t", temporary=True, lifetime_micros=lifetime // timedelta(microseconds=1)
    )
    assert temporary.temporary
    assert temporary.create_time is not None
    assert temporary.expire_time == temporary.create_time + lifetime
    durable = await create_conversation(history, "alice", "d")
    assert durable.expire_time is None
    forever = await create_conversation(history, "alice", "f", temporary=True)
    assert forever.temporary and forever.expire_time is None


async def test_get_of_a_missing_conversation_is_not_found(history: SqlStore) -> None:
    await create(history, "c1")
    with pytest.raises(NotFound):
        await history.conversations.get_conversation("alice", "nope")
    with pytest.raises(NotFound):
        await history.conversations.get_conversation("bob", "c1")


async def test_list_pages_through_the_most_recently_updated_first(
    history: SqlStore, memory: SqlStore
) -> None:
    for name in ["c0", "c1", "c2", "c3", "c4"]:
        await create(history, name)
    # Touch c1: it becomes the most recently updated.
    await append_messages(history, "alice", "c1", messages("hi"), run_id="r")
    await save_state(memory, ConversationKey("alice", ""), "default")
    await create(history, "other", user_id="bob")

    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = await history.conversations.list_conversations("alice", limit=2, after=after)
        pages += 1
        seen += [c.conversation_id for c in page.items]
        assert len(page.items) <= 2
        if page.next_after is None:
            break
        after = page.next_after
    assert pages == 3
    assert seen[0] == "c1"
    assert sorted(seen) == ["c0", "c1", "c2", "c3", "c4"]
    full = await history.conversations.list_conversations("alice", limit=10, after=None)
    assert [c.conversation_id for c in full.items] == seen
    times = [c.update_time for c in full.items if c.update_time is not None]
    assert len(times) == 5 and times == sorted(times, reverse=True)


async def test_list_of_a_user_without_conversations_is_empty(history: SqlStore) -> None:
    page = await history.conversations.list_conversations("nobody", limit=5, after=None)
    assert page.items == () and page.next_after is None


async def test_update_metadata_checks_the_etag(history: SqlStore) -> None:
    created = await create_conversation(history, "alice", "c1", metadata={"v": 1})
    updated = await update_conversation(
        history, "alice", "c1", METADATA, expected_etag=created.etag
    )
    assert updated.metadata == METADATA
    assert updated.etag != created.etag
    with pytest.raises(Aborted) as caught:
        await update_conversation(history, "alice", "c1", {"v": 3}, expected_etag=created.etag)
    assert caught.value.reason == "ETAG_MISMATCH"
    assert await history.conversations.get_conversation("alice", "c1") == updated
    with pytest.raises(NotFound):
        await update_conversation(history, "alice", "nope", {})


async def test_delete_removes_everything_that_hangs_off_the_conversation(
    history: SqlStore, memory: SqlStore
) -> None:
    key = ConversationKey("alice", "c1")
    appended = await append_messages(history, "alice", "c1", messages("a", "b", "c"), run_id="r")
    snapshot = await history.conversations.snapshot_history("alice", "c1")
    await replace_history_prefix(
        history,
        "alice",
        "c1",
        revision=snapshot.revision,
        message_count=2,
        replacement=messages("summary"),
        run_id="compact",
    )
    await record_failed_run(history, "alice", "c1", run_id="r2", error=RunError("boom"))
    await save_state(memory, key, "brief", [exchange(1)])
    current = await history.conversations.get_conversation("alice", "c1")

    with pytest.raises(Aborted):
        await delete_conversation(history, "alice", "c1", expected_etag=appended.conversation.etag)
    await delete_conversation(history, "alice", "c1", expected_etag=current.etag)

    with pytest.raises(NotFound):
        await history.conversations.get_conversation("alice", "c1")
    with pytest.raises(NotFound):
        await history.conversations.list_messages("alice", "c1", start_position=0, limit=10)
    with pytest.raises(NotFound):
        await history.conversations.list_failed_runs("alice", "c1", limit=10, after=None)
    with pytest.raises(NotFound):
        await delete_conversation(history, "alice", "c1")
    assert await memory.conversations.get_state(key) == MemoryState()

    # Recreated, it starts from nothing, with an etag never seen before.
    again = await append_messages(
        history, "alice", "c1", messages("new"), run_id="r", expected_position=0
    )
    assert [m.position for m in again.messages] == [0]
    assert again.conversation.etag not in (current.etag, appended.conversation.etag)
    page = await history.conversations.list_failed_runs("alice", "c1", limit=10, after=None)
    assert page.items == ()
