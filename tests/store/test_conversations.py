"""Conversation conformance (ConversationStore): create, get, list, update,
delete, on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo_server.domain.errors import Aborted, AlreadyExists, NotFound
from mnemo_server.domain.models import ConversationKey, MemoryState, RunError
from mnemo_server.store.database import Database
from mnemo_server.store.interfaces import ConversationStore, WorkingMemoryStore
from mnemo_server.store.sql import SqlStore
from tests.store.samples import exchange, idem, messages

METADATA = {"title": "Voyage à Paris", "tags": ["a", "b"], "nested": {"n": 1, "x": None}}


async def create(history: ConversationStore, conversation_id: str, user_id: str = "alice") -> None:
    await history.create_conversation(
        user_id, conversation_id, metadata={}, temporary=False, idempotency=None
    )


async def test_create_then_get(history: ConversationStore) -> None:
    created = await history.create_conversation(
        "alice", "c1", metadata=METADATA, temporary=False, idempotency=None
    )
    assert (created.user_id, created.conversation_id) == ("alice", "c1")
    assert created.metadata == METADATA
    assert created.message_count == 0
    assert created.etag != ""
    assert created.create_time is not None and created.create_time == created.update_time
    assert created.expire_time is None
    assert await history.get_conversation("alice", "c1") == created


async def test_create_refuses_a_taken_id_unless_it_is_a_retry(history: ConversationStore) -> None:
    key = idem("create-1", scope="CreateConversation")
    first = await history.create_conversation(
        "alice", "c1", metadata=METADATA, temporary=False, idempotency=key
    )
    again = await history.create_conversation(
        "alice", "c1", metadata=METADATA, temporary=False, idempotency=key
    )
    assert again == first
    with pytest.raises(AlreadyExists):
        await history.create_conversation(
            "alice", "c1", metadata={}, temporary=False, idempotency=None
        )
    # Another user's conversation of the same id is another conversation.
    await create(history, "c1", user_id="bob")


async def test_a_temporary_conversation_expires_after_the_ttl(database: Database) -> None:
    store = SqlStore(database, temporary_ttl=timedelta(hours=2))
    temporary = await store.create_conversation(
        "alice", "t", metadata={}, temporary=True, idempotency=None
    )
    assert temporary.temporary
    assert temporary.create_time is not None
    assert temporary.expire_time == temporary.create_time + timedelta(hours=2)
    durable = await store.create_conversation(
        "alice", "d", metadata={}, temporary=False, idempotency=None
    )
    assert durable.expire_time is None


async def test_get_of_a_missing_conversation_is_not_found(history: ConversationStore) -> None:
    await create(history, "c1")
    with pytest.raises(NotFound):
        await history.get_conversation("alice", "nope")
    with pytest.raises(NotFound):
        await history.get_conversation("bob", "c1")


async def test_list_pages_through_the_most_recently_updated_first(
    history: ConversationStore, memory: WorkingMemoryStore
) -> None:
    for name in ["c0", "c1", "c2", "c3", "c4"]:
        await create(history, name)
    # Touch c1: it becomes the most recently updated.
    await history.append_messages(
        "alice",
        "c1",
        messages("hi"),
        run_id="r",
        turn=0,
        expected_position=None,
        create_metadata={},
        idempotency=None,
    )
    await memory.save_state(ConversationKey("alice", ""), "default", [], expected_etag=None)
    await create(history, "other", user_id="bob")

    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = await history.list_conversations("alice", limit=2, after=after)
        pages += 1
        seen += [c.conversation_id for c in page.items]
        assert len(page.items) <= 2
        if page.next_after is None:
            break
        after = page.next_after
    assert pages == 3
    assert seen[0] == "c1"
    assert sorted(seen) == ["c0", "c1", "c2", "c3", "c4"]
    full = await history.list_conversations("alice", limit=10, after=None)
    assert [c.conversation_id for c in full.items] == seen
    times = [c.update_time for c in full.items if c.update_time is not None]
    assert len(times) == 5 and times == sorted(times, reverse=True)


async def test_list_of_a_user_without_conversations_is_empty(history: ConversationStore) -> None:
    page = await history.list_conversations("nobody", limit=5, after=None)
    assert page.items == () and page.next_after is None


async def test_update_metadata_checks_the_etag(history: ConversationStore) -> None:
    created = await history.create_conversation(
        "alice", "c1", metadata={"v": 1}, temporary=False, idempotency=None
    )
    updated = await history.update_conversation_metadata(
        "alice", "c1", METADATA, expected_etag=created.etag
    )
    assert updated.metadata == METADATA
    assert updated.etag != created.etag
    with pytest.raises(Aborted) as caught:
        await history.update_conversation_metadata(
            "alice", "c1", {"v": 3}, expected_etag=created.etag
        )
    assert caught.value.reason == "ETAG_MISMATCH"
    assert await history.get_conversation("alice", "c1") == updated
    with pytest.raises(NotFound):
        await history.update_conversation_metadata("alice", "nope", {}, expected_etag=None)


async def test_delete_removes_everything_that_hangs_off_the_conversation(
    history: ConversationStore, memory: WorkingMemoryStore
) -> None:
    key = ConversationKey("alice", "c1")
    appended = await history.append_messages(
        "alice",
        "c1",
        messages("a", "b", "c"),
        run_id="r",
        turn=0,
        expected_position=None,
        create_metadata={},
        idempotency=None,
    )
    snapshot = await history.snapshot_history("alice", "c1")
    await history.replace_history_prefix(
        "alice",
        "c1",
        revision=snapshot.revision,
        message_count=2,
        replacement=messages("summary"),
        run_id="compact",
        idempotency=None,
    )
    await history.record_failed_run(
        "alice", "c1", run_id="r2", error=RunError("boom"), messages=[], idempotency=None
    )
    await memory.save_state(key, "brief", [exchange(1)], expected_etag=None)
    current = await history.get_conversation("alice", "c1")

    with pytest.raises(Aborted):
        await history.delete_conversation("alice", "c1", expected_etag=appended.conversation.etag)
    await history.delete_conversation("alice", "c1", expected_etag=current.etag)

    with pytest.raises(NotFound):
        await history.get_conversation("alice", "c1")
    with pytest.raises(NotFound):
        await history.list_messages("alice", "c1", start_position=0, limit=10)
    with pytest.raises(NotFound):
        await history.list_failed_runs("alice", "c1", limit=10, after=None)
    with pytest.raises(NotFound):
        await history.delete_conversation("alice", "c1", expected_etag=None)
    assert await memory.get_state(key) == MemoryState()

    # Recreated, it starts from nothing, with an etag never seen before.
    again = await history.append_messages(
        "alice",
        "c1",
        messages("new"),
        run_id="r",
        turn=0,
        expected_position=0,
        create_metadata={},
        idempotency=None,
    )
    assert [m.position for m in again.messages] == [0]
    assert again.conversation.etag not in (current.etag, appended.conversation.etag)
    page = await history.list_failed_runs("alice", "c1", limit=10, after=None)
    assert page.items == ()
