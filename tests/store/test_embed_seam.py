"""The one seam between the writes and the server's embedder
(``store.memories.vectors``): a write collects the entries it leaves
without a vector on its ``Tx``; a store that embeds adds them to the backlog
in the write's transaction and, once committed, hands their users to the
one hook (``SqlStore.vectors_queued``), for commands and imports alike; a
store that does not embed queues nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_server.domain.memory_models import Memory, MemoryChange
from mnemo_server.domain.models import Idempotency
from mnemo_server.domain.user_data import UserData
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.transactions.database import Database
from tests.store.memory_samples import draft
from tests.store.writes import create_memories, import_user, update_memory

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def backlog(store: SqlStore) -> list[tuple[str, str]]:
    """The backlog: (user, text), in queue order."""
    return [(p.user_id, p.text) for p in await store.embeddings.pending(limit=100)]


async def test_a_store_that_embeds_queues_and_hands_over_the_users_once_committed(
    database: Database,
) -> None:
    store = SqlStore(database, embed_later=True)
    told: list[str] = []
    store.vectors_queued = told.append
    await create_memories(
        store, "alice", [("a", draft("one")), ("b", draft("two", vector=(1.0, 0.0)))]
    )
    assert told == ["alice"]
    assert await backlog(store) == [("alice", "one")]
    # A duplicate and a client vector queue nothing: nobody is told.
    await create_memories(
        store, "alice", [("c", draft("one")), ("d", draft("three", vector=(0.0, 1.0)))]
    )
    assert told == ["alice"]
    await update_memory(store, "alice", "b", MemoryChange(text="two, reworded"))
    assert told == ["alice", "alice"]
    assert sorted(await backlog(store)) == [("alice", "one"), ("alice", "two, reworded")]
    # The user data store runs its imports through the same seam and hook.
    entry = Memory(memory_id="m1", user_id="bob", text="imported", create_time=T0, update_time=T0)
    await import_user(store.user_data, "bob", UserData(memories=(entry,)))
    assert told == ["alice", "alice", "bob"]
    assert ("bob", "imported") in await backlog(store)


async def test_a_replayed_request_queues_nothing_again(database: Database) -> None:
    store = SqlStore(database, embed_later=True)
    told: list[str] = []
    store.vectors_queued = told.append
    key = Idempotency(request_id="create-1", scope="memories", fingerprint="fingerprint")
    for _ in range(2):
        await create_memories(store, "alice", [("a", draft("one"))], idempotency=key)
    assert told == ["alice"]
    assert await backlog(store) == [("alice", "one")]


async def test_a_store_that_does_not_embed_queues_nothing(database: Database) -> None:
    store = SqlStore(database)
    told: list[str] = []
    store.vectors_queued = told.append
    await create_memories(store, "alice", [("a", draft("one"))])
    await update_memory(store, "alice", "a", MemoryChange(text="one, reworded"))
    assert told == []
    assert await backlog(store) == []
