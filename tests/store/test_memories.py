"""Memory entry conformance (MemoryStore): save, get, list, keyed supersede
and its audit trail, update, racing keyed saves, ids, idempotency, vectors'
dimensions; on every backend."""

from __future__ import annotations

import asyncio

import pytest

from mnemo_server.domain.errors import (
    Aborted,
    AlreadyExists,
    Entry,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Part,
)
from mnemo_server.domain.memory_models import (
    Embedding,
    MemoryChange,
    MemoryListQuery,
    MemoryScope,
    MemorySource,
    SavedMemory,
)
from mnemo_server.store.composed import SqlStore
from tests.store.memory_samples import all_memories, draft, save
from tests.store.samples import idem
from tests.store.writes import create_memories, delete_memory, update_memory


@pytest.fixture
def store(sql_store: SqlStore) -> SqlStore:
    return sql_store


async def test_save_then_get_and_list(store: SqlStore) -> None:
    saved = await create_memories(
        store,
        "alice",
        [
            ("m1", draft("Prefers tea", metadata={"origin": "chat", "é": "ü"}, pinned=True)),
            ("m2", draft("Order RMA-1234 is late", conversation="c1")),
        ],
    )
    first, second = (s.memory for s in saved)
    assert [s.archived_ids for s in saved] == [(), ()]
    assert (first.memory_id, first.user_id, first.text) == ("m1", "alice", "Prefers tea")
    assert first.metadata == {"origin": "chat", "é": "ü"} and first.pinned
    assert first.scope is MemoryScope.IDENTITY and first.conversation_id == ""
    assert first.source is MemorySource.TOOL_CALL
    assert first.create_time == first.update_time and first.archive_time is None
    assert first.etag and first.etag != second.etag and first.embedding is None
    assert (second.scope, second.conversation_id) == (MemoryScope.CONVERSATION, "c1")
    assert await store.memories.get_memory("alice", "m1") == first
    assert await store.memories.get_memory("alice", "m2") == second
    listed = await store.memories.list_memories("alice", MemoryListQuery(limit=10))
    assert {m.memory_id for m in listed.items} == {"m1", "m2"} and listed.next_after is None
    with pytest.raises(NotFound):
        await store.memories.get_memory("alice", "nope")
    with pytest.raises(NotFound):
        await store.memories.get_memory("bob", "m1")
    assert (await store.memories.list_memories("bob", MemoryListQuery(limit=10))).items == ()


async def test_list_pages_newest_first_with_filters(store: SqlStore) -> None:
    for n in range(12):
        conversation = "c1" if n % 3 == 0 else ""
        await save(
            store, f"m{n:02}", draft(f"fact {n}", key=f"k{n % 2}x{n}", conversation=conversation)
        )
    everything = await all_memories(store)
    assert [m.memory_id for m in everything] == [f"m{n:02}" for n in reversed(range(12))]
    scoped = await store.memories.list_memories(
        "alice", MemoryListQuery(limit=50, scope=MemoryScope.CONVERSATION, conversation_id="c1")
    )
    assert [m.memory_id for m in scoped.items] == ["m09", "m06", "m03", "m00"]
    identity = await store.memories.list_memories(
        "alice", MemoryListQuery(limit=50, conversation_id="")
    )
    assert len(identity.items) == 8
    keyed = await store.memories.list_memories("alice", MemoryListQuery(limit=50, key="k1x5"))
    assert [m.memory_id for m in keyed.items] == ["m05"]


async def test_a_keyed_save_supersedes_and_the_trail_shows_it(store: SqlStore) -> None:
    old = await save(store, "m1", draft("Likes sushi", key="food"))
    other_scope = await save(store, "m2", draft("Likes pizza here", key="food", conversation="c1"))
    (saved,) = await create_memories(store, "alice", [("m3", draft("Likes ramen", key="food"))])
    assert saved.archived_ids == ("m1",)
    archived = await store.memories.get_memory("alice", "m1")
    assert archived.archive_time == saved.memory.create_time
    assert archived.text == old.text and archived.etag != old.etag
    assert (
        await store.memories.get_memory("alice", "m2")
    ) == other_scope  # another scope: untouched
    live = await store.memories.list_memories("alice", MemoryListQuery(limit=10, key="food"))
    assert [m.memory_id for m in live.items] == ["m3", "m2"]
    audit = await store.memories.list_memories(
        "alice", MemoryListQuery(limit=10, key="food", include_archived=True)
    )
    assert [m.memory_id for m in audit.items] == ["m3", "m2", "m1"]
    trail = await store.memories.list_memory_versions("alice", "m1", limit=10, after=None)
    assert [(m.memory_id, m.text, m.archived) for m in trail.items] == [
        ("m3", "Likes ramen", False),
        ("m1", "Likes sushi", True),
    ]


async def test_supersede_within_one_call(store: SqlStore) -> None:
    await save(store, "m0", draft("Lives in Lyon", key="city"))
    saved = await create_memories(
        store,
        "alice",
        [("m1", draft("Lives in Paris", key="city")), ("m2", draft("Lives in Oslo", key="city"))],
    )
    assert [s.archived_ids for s in saved] == [("m0",), ("m1",)]
    assert [s.memory.archived for s in saved] == [True, False]
    live = await store.memories.list_memories("alice", MemoryListQuery(limit=10))
    assert [m.memory_id for m in live.items] == ["m2"]


async def test_update_keeps_the_previous_version(store: SqlStore) -> None:
    before = await save(store, "m1", draft("Likes tea", metadata={"a": "1"}))
    with pytest.raises(Aborted) as stale:
        await update_memory(
            store, "alice", "m1", MemoryChange(text="x"), expected_etag="not-the-etag"
        )
    assert stale.value.reason == "ETAG_MISMATCH"
    after = await update_memory(
        store,
        "alice",
        "m1",
        MemoryChange(text="Likes green tea", pinned=True),
        expected_etag=before.etag,
    )
    assert (after.text, after.pinned, after.metadata) == ("Likes green tea", True, {"a": "1"})
    assert after.etag != before.etag and after.update_time > before.update_time
    assert after.create_time == before.create_time
    again = await update_memory(store, "alice", "m1", MemoryChange(metadata={"b": "2"}))
    assert (again.text, again.metadata) == ("Likes green tea", {"b": "2"})
    trail = await store.memories.list_memory_versions("alice", "m1", limit=10, after=None)
    assert [(m.text, m.metadata, m.pinned) for m in trail.items] == [
        ("Likes green tea", {"b": "2"}, True),
        ("Likes green tea", {"a": "1"}, True),
        ("Likes tea", {"a": "1"}, False),
    ]
    assert trail.items[2].etag == before.etag
    assert trail.items[2].update_time == before.update_time
    assert trail.items[2].archive_time == after.update_time
    first = await store.memories.list_memory_versions("alice", "m1", limit=2, after=None)
    rest = await store.memories.list_memory_versions("alice", "m1", limit=2, after=first.next_after)
    assert first.items + rest.items == trail.items and rest.next_after is None
    with pytest.raises(NotFound):
        await update_memory(store, "alice", "nope", MemoryChange(text="x"))
    with pytest.raises(NotFound):
        await store.memories.list_memory_versions("alice", "nope", limit=10, after=None)


async def test_racing_keyed_saves_leave_one_live_entry(store: SqlStore) -> None:
    async def one(n: int) -> SavedMemory:
        (saved,) = await create_memories(
            store, "alice", [(f"m{n}", draft(f"Timezone is UTC+{n}", key="timezone"))]
        )
        return saved

    saved = await asyncio.gather(*(one(n) for n in range(10)))
    everything = await all_memories(store)
    assert len(everything) == 10
    live = [m for m in everything if not m.archived]
    assert len(live) == 1
    # Every save archived the one live before it: a single chain.
    archived = sorted(i for s in saved for i in s.archived_ids)
    assert archived == sorted(m.memory_id for m in everything if m.archived)


async def test_a_taken_or_deleted_id_is_not_reusable(store: SqlStore) -> None:
    await save(store, "m1", draft("first"))
    with pytest.raises(AlreadyExists) as taken:
        await save(store, "m1", draft("second"))
    assert taken.value.metadata["name"] == "users/alice/memories/m1"
    with pytest.raises(AlreadyExists):
        await create_memories(store, "alice", [("m2", draft("a")), ("m2", draft("b"))])
    assert [m.memory_id for m in await all_memories(store)] == ["m1"]
    await delete_memory(store, "alice", "m1")
    with pytest.raises(AlreadyExists):
        await save(store, "m1", draft("third"))
    await save(store, "m1", draft("bob's own"), user="bob")


async def test_idempotent_create(store: SqlStore) -> None:
    key = idem("req-1", scope="CreateMemory")
    first = await create_memories(store, "alice", [("m1", draft("fact"))], idempotency=key)
    again = await create_memories(store, "alice", [("m1", draft("fact"))], idempotency=key)
    assert again == first
    with pytest.raises(FailedPrecondition) as reused:
        await create_memories(
            store,
            "alice",
            [("m2", draft("other"))],
            idempotency=idem("req-1", "fp-2", "CreateMemory"),
        )
    assert reused.value.reason == "REQUEST_ID_REUSED"
    assert len(await all_memories(store)) == 1


async def test_vectors_are_kept_and_dimensions_checked(store: SqlStore) -> None:
    saved = await save(store, "m1", draft("a", vector=[1.0, 2.0, 3.0]))
    assert saved.embedding is None  # a save answers without the vector (no response has one)
    stored = await store.memories.get_memory("alice", "m1")
    assert stored.embedding == Embedding("test-model", (1.0, 2.0, 3.0))
    await save(store, "m2", draft("b", vector=[1.0, 2.0], model="other-model"))
    with pytest.raises(InvalidArgument) as mismatch:
        await save(store, "m3", draft("c", vector=[1.0, 2.0]))
    assert mismatch.value.reason == "EMBEDDING_DIMENSION_MISMATCH"
    assert mismatch.value.metadata == {"expected": "3", "got": "2"}
    assert mismatch.value.entry == Entry(Part.EMBEDDING, 0)  # the API names the field
    assert mismatch.value.violations == ()
    with pytest.raises(InvalidArgument):
        await create_memories(
            store,
            "alice",
            [
                ("m4", draft("d", vector=[1.0] * 4, model="new")),
                ("m5", draft("e", vector=[1.0], model="new")),
            ],
        )
    with pytest.raises(InvalidArgument):
        await update_memory(
            store, "alice", "m2", MemoryChange(embedding=Embedding("test-model", (1.0,)))
        )
    # The only vector of its model may change its dimension.
    changed = await update_memory(
        store, "alice", "m2", MemoryChange(embedding=Embedding("other-model", (0.5,)))
    )
    assert changed.embedding == Embedding("other-model", (0.5,))
    assert (await store.memories.get_memory("alice", "m2")).text == "b"
    # Another user's vectors are another matter.
    await save(store, "m1", draft("x", vector=[1.0]), user="bob")
