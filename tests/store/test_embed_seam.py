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
from mnemo_server.store.transactions.database import Database, open_database
from tests.store.memory_samples import draft
from tests.store.writes import create_memories, import_user, update_memory
from tests.support.statement_log import StatementLog

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


async def test_the_backlog_costs_a_write_one_statement_at_its_end(database_url: str) -> None:
    """The same saves by a store that embeds and by one that does not: the
    one that embeds runs one statement more, the backlog's insert, last in
    the write (SQLite's trace shows an insert of n rows n times), for a
    save that queues entries; none for one that does not."""
    writes = [
        [("a", draft("one"))],
        [("k1", draft("a keyed fact", key="k"))],
        [("k2", draft("a newer keyed fact", key="k"))],
        [(f"b{i}", draft(f"fact {i}", key=f"x{i % 2}")) for i in range(5)],
        [("v", draft("with a vector", vector=(1.0, 0.0)))],
        [("dup", draft("one"))],
    ]
    with StatementLog() as log:
        db = open_database(database_url, read_lanes=1)
        try:
            counts: dict[bool, list[int]] = {}
            for embeds, user_id in ((True, "alice"), (False, "bob")):
                store = SqlStore(db, embed_later=embeds)
                await create_memories(store, f"{user_id}-warm-up", [("w", draft("warm up"))])
                log.take()
                counts[embeds] = []
                for saves in writes:
                    await create_memories(store, user_id, saves)
                    statements = [s for s in log.take() if s != "COMMIT"]
                    counts[embeds].append(len(statements))
                    queued = [i for i, s in enumerate(statements) if "embedding_backlog" in s]
                    assert queued == list(range(len(statements) - len(queued), len(statements)))
        finally:
            await db.close()
    rows = 5 if db.dialect == "sqlite" else 1
    assert [e - p for e, p in zip(counts[True], counts[False], strict=True)] == [
        1,
        1,
        1,
        rows,
        0,
        0,
    ]
