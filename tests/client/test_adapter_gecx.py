"""gecx-chat's server memory adapter over Mnemo, blocking and asyncio, through a real server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemo.adapters.gecx import (
    AsyncServerMemoryAdapter,
    ServerMemoryAdapter,
    create_server_memory_adapter,
    new_memory_id,
)
from mnemo.adapters.gecx_hybrid import create_hybrid_memory_adapter
from mnemo.client import (
    AsyncMnemoClient,
    FailedPreconditionError,
    InvalidArgumentError,
    MnemoClient,
    NotFoundError,
)

pytestmark = pytest.mark.timeout(60)

JAN = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
JUN = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def mnemo(mnemo_target: str) -> Iterator[MnemoClient]:
    with MnemoClient(mnemo_target) as client:
        yield client


@pytest.fixture
def adapter(mnemo: MnemoClient, user: str) -> ServerMemoryAdapter:
    made = create_server_memory_adapter(mnemo, user=user)
    assert isinstance(made, ServerMemoryAdapter)
    return made


def test_save_then_list_get_update_and_delete(
    adapter: ServerMemoryAdapter, mnemo: MnemoClient, user: str
) -> None:
    vegan = adapter.save("Prefers vegan recipes.", metadata={"origin": "chat"})
    rma = adapter.save("This conversation is about order RMA-1234.", conversation_id="c1")

    assert (vegan.scope, vegan.conversation_id, vegan.source) == ("identity", "", "tool_call")
    assert (rma.scope, rma.conversation_id) == ("conversation", "c1")
    assert vegan.etag and vegan.created_at is not None and not vegan.archived
    assert [e.id for e in adapter.list()] == [rma.id, vegan.id]
    assert [e.id for e in adapter.list(scope="identity")] == [vegan.id]
    assert [e.id for e in adapter.list(conversation_id="c1")] == [rma.id]
    assert adapter.get(vegan.id) == vegan
    assert mnemo.get_memory(user, vegan.id).metadata["origin"] == "chat"

    updated = adapter.update(vegan.id, text="Prefers vegan, gluten-free recipes.", pinned=True)
    assert (updated.text, updated.pinned, updated.metadata) == (
        "Prefers vegan, gluten-free recipes.",
        True,
        {"origin": "chat"},
    )
    assert updated.etag != vegan.etag

    adapter.delete(rma.id)
    adapter.delete(rma.id)  # already gone: not an error
    assert adapter.get(rma.id) is None
    assert [e.id for e in adapter.list()] == [vegan.id]
    with pytest.raises(NotFoundError):
        adapter.update(rma.id, text="gone")


def test_a_keyed_save_archives_the_previous_entry(adapter: ServerMemoryAdapter) -> None:
    first = adapter.save("Lives in Lyon.", key="home_city")
    second = adapter.save("Lives in Porto.", key="home_city")

    assert [e.text for e in adapter.list()] == ["Lives in Porto."]
    everything = adapter.list(include_archived=True)
    assert [(e.id, e.archived) for e in everything] == [(second.id, False), (first.id, True)]
    assert [e.id for e in adapter.list(key="home_city")] == [second.id]
    archived = adapter.get(first.id)
    assert archived is not None and archived.archived_at is not None


def test_a_save_carries_the_turns_time_and_the_same_fact_is_stored_once(
    adapter: ServerMemoryAdapter, mnemo: MnemoClient, user: str
) -> None:
    aisle = adapter.save("Prefers aisle seats.", event_time=JAN)
    assert aisle.event_time == JAN
    assert mnemo.get_memory(user, aisle.id).event_time.ToDatetime(UTC) == JAN

    chosen = new_memory_id()
    again = adapter.save_result("prefers AISLE seats", memory_id=chosen, event_time=JUN)
    assert (again.outcome, again.entry.id) == ("duplicate", aisle.id)  # not the chosen id
    assert adapter.get(chosen) is None
    assert [e.id for e in adapter.list(include_archived=True)] == [aisle.id]
    assert adapter.save("Prefers aisle seats.") == adapter.get(aisle.id)

    porto = adapter.save("Lives in Porto.", key="home", event_time=JUN)
    lyon = adapter.save_result("Lives in Lyon.", key="home", event_time=JAN)
    assert lyon.outcome == "historical"  # said before Porto: an earlier version of the key
    assert lyon.entry.archived and lyon.entry.valid_until == JUN
    assert [e.id for e in adapter.list(key="home")] == [porto.id]


def test_recall_ranks_the_conversation_above_identity(adapter: ServerMemoryAdapter) -> None:
    adapter.save("Ships orders to Lyon.")
    adapter.save("Ships this order to Porto.", conversation_id="c7")
    adapter.save("Likes jazz.")

    hits = adapter.recall("ships order", conversation_id="c7")
    assert [h.entry.text for h in hits][:2] == [
        "Ships this order to Porto.",
        "Ships orders to Lyon.",
    ]
    assert hits[0].score >= hits[1].score
    assert [h.entry.text for h in adapter.recall("ships order")] == ["Ships orders to Lyon."]
    assert len(adapter.recall("ships order", conversation_id="c7", limit=1)) == 1


def test_governance_refusals_are_raised_with_their_reason(
    adapter: ServerMemoryAdapter, mnemo: MnemoClient, user: str
) -> None:
    kept = adapter.save("Allergic to nuts.")
    mnemo.set_consent(user, "withdrawn")

    with pytest.raises(FailedPreconditionError) as raised:
        adapter.save("Anything.")
    assert raised.value.reason == "MEMORY_CONSENT_WITHDRAWN"
    assert adapter.recall("nuts") == []
    with pytest.raises(InvalidArgumentError):
        adapter.save("")
    mnemo.set_consent(user, "granted")
    assert [e.id for e in adapter.list()] == [kept.id]


def test_writes_made_in_a_temporary_conversation_are_refused_whatever_their_scope(
    adapter: ServerMemoryAdapter, mnemo: MnemoClient, user: str, tmp_path: Path
) -> None:
    mnemo.create_conversation(user, "secret", temporary=True)
    mnemo.create_conversation(user, "open")
    kept = adapter.save("Allergic to nuts.")

    refusals = (
        lambda: adapter.save("Works nights.", origin_conversation_id="secret"),
        lambda: adapter.update(kept.id, text="Allergic to cats.", origin_conversation_id="secret"),
        lambda: adapter.delete(kept.id, origin_conversation_id="secret"),
    )
    for write in refusals:
        with pytest.raises(FailedPreconditionError) as raised:
            write()
        assert raised.value.reason == "TEMPORARY_CONVERSATION"
    assert [(e.id, e.text) for e in adapter.list()] == [(kept.id, "Allergic to nuts.")]

    # The hybrid adapter rolls its optimistic copy back.
    hybrid = create_hybrid_memory_adapter(remote=adapter, cache=tmp_path / "cache.db")
    with pytest.raises(FailedPreconditionError):
        hybrid.save("Works nights.", origin_conversation_id="secret")
    assert [e.text for e in hybrid.cache.entries(user)] == []

    # In an ordinary conversation the same writes go through.
    saved = hybrid.save("Works nights.", origin_conversation_id="open")
    adapter.update(kept.id, text="Allergic to cats.", origin_conversation_id="open")
    adapter.delete(saved.id, origin_conversation_id="open")
    assert [e.text for e in adapter.list()] == ["Allergic to cats."]


async def test_the_asyncio_adapter_does_the_same(mnemo_target: str, user: str) -> None:
    async with AsyncMnemoClient(mnemo_target) as mnemo:
        adapter = create_server_memory_adapter(mnemo, user=user)
        assert isinstance(adapter, AsyncServerMemoryAdapter)

        first = await adapter.save("Lives in Lyon.", key="city", event_time=JAN)
        second = await adapter.save("Lives in Porto.", key="city", pinned=True)
        assert [e.id for e in await adapter.list()] == [second.id]
        assert len(await adapter.list(include_archived=True)) == 2
        assert (await mnemo.get_memory(user, first.id)).event_time.ToDatetime(UTC) == JAN
        again = await adapter.save_result("Lives in Porto", key="city", memory_id="m-again")
        assert (again.outcome, again.entry.id) == ("duplicate", second.id)
        assert len(await adapter.list(include_archived=True)) == 2
        assert (await adapter.update(second.id, text="Lives in Porto, Portugal.")).pinned
        hits = await adapter.recall("porto")
        assert [h.entry.id for h in hits] == [second.id]
        assert await adapter.get(first.id) is not None
        await adapter.delete(first.id)
        assert await adapter.get(first.id) is None
