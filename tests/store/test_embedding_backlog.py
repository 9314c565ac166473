"""The embedding backlog (``EmbeddingStore``) and the background embedder
over it (``usecases.embedding_worker``), on every backend: what saves,
updates, approvals and imports queue; vectors stored only for the text they
were computed from; client vectors never overwritten; the lease; a new
model's backfill; an embedder that refuses a text or is down."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import pytest

from mnemo_server.domain.embedding_backlog import ComputedVector
from mnemo_server.domain.memory_models import CandidateDraft, Embedding, MemoryChange
from mnemo_server.domain.usecases.embedding_worker import EmbeddingWorker
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.embedders.hashing import HashingEmbedder
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.transactions.database import Database
from tests.store.memory_samples import draft
from tests.store.writes import (
    approve_candidate,
    create_memories,
    delete_memory,
    erase_user,
    propose_candidates,
    update_memory,
)

MODEL = HashingEmbedder(8).model


@pytest.fixture
def store(database: Database) -> SqlStore:
    """A store of a server that computes vectors (``--embedder`` set)."""
    return SqlStore(database, embed_later=True)


def vector_of(text: str) -> Embedding:
    """The hashing model's vector of ``text``, as stored (float32)."""
    (values,) = HashingEmbedder(8).embed([text])
    return Embedding(MODEL, decode_vector(encode_vector(values)))


async def queued(store: SqlStore, user_id: str | None = None) -> dict[int, str]:
    """The backlog: text by ``memories.id``."""
    return {p.memory_pk: p.text for p in await store.embeddings.pending(limit=100, user_id=user_id)}


async def embed_all(store: SqlStore) -> int:
    pending = await store.embeddings.pending(limit=100)
    return await store.embeddings.store_vectors(
        [ComputedVector(p.memory_pk, p.user_id, p.version, vector_of(p.text)) for p in pending]
    )


async def test_saves_without_a_vector_are_queued_and_their_vectors_stored(store: SqlStore) -> None:
    await create_memories(
        store,
        "alice",
        [("a", draft("Likes tea")), ("b", draft("Has a dog", vector=(1.0, 0.0), model="client"))],
    )
    await create_memories(store, "bob", [("c", draft("Rides a bike"))])
    assert sorted((await queued(store)).values()) == ["Likes tea", "Rides a bike"]
    assert list((await queued(store, "bob")).values()) == ["Rides a bike"]
    assert await store.embeddings.backlog_size() == 2

    assert await embed_all(store) == 2
    assert await queued(store) == {}
    tea = await store.memories.get_memory("alice", "a")
    assert tea.embedding == vector_of("Likes tea")
    dog = await store.memories.get_memory("alice", "b")
    assert dog.embedding == Embedding("client", (1.0, 0.0))  # the client's, untouched
    progress = await store.embeddings.progress(MODEL)
    assert (progress.backlog, progress.vectors, progress.computed) == (0, 2, 2)


async def test_a_server_without_an_embedder_queues_nothing(database: Database) -> None:
    plain = SqlStore(database)
    await create_memories(plain, "alice", [("a", draft("Likes tea"))])
    assert await queued(plain) == {}


async def test_a_vector_of_an_older_text_is_not_stored(store: SqlStore) -> None:
    await create_memories(store, "alice", [("a", draft("Lives in Berlin"))])
    (read,) = await store.embeddings.pending(limit=10)
    await update_memory(store, "alice", "a", MemoryChange(text="Lives in Oslo"))
    stale = ComputedVector(read.memory_pk, "alice", read.version, vector_of(read.text))
    assert await store.embeddings.store_vectors([stale]) == 0
    assert list((await queued(store)).values()) == ["Lives in Oslo"]
    assert await embed_all(store) == 1
    assert (await store.memories.get_memory("alice", "a")).embedding == vector_of("Lives in Oslo")

    # New text without a vector: queued again, the old vector kept until then.
    await update_memory(store, "alice", "a", MemoryChange(text="Lives in Rome"))
    assert list((await queued(store)).values()) == ["Lives in Rome"]
    assert (await store.memories.get_memory("alice", "a")).embedding == vector_of("Lives in Oslo")
    # Metadata only: nothing to embed again.
    await embed_all(store)
    await update_memory(store, "alice", "a", MemoryChange(metadata={"k": "v"}))
    assert await queued(store) == {}


async def test_a_client_vector_takes_the_entry_off_the_backlog(store: SqlStore) -> None:
    await create_memories(store, "alice", [("a", draft("Lives in Berlin"))])
    client = Embedding("client", (0.5, 0.5))
    await update_memory(store, "alice", "a", MemoryChange(text="Lives in Oslo", embedding=client))
    assert await queued(store) == {}
    assert await embed_all(store) == 0
    assert (await store.memories.get_memory("alice", "a")).embedding == client


async def test_deleted_and_erased_entries_leave_the_backlog(store: SqlStore) -> None:
    await create_memories(store, "alice", [("a", draft("one")), ("b", draft("two"))])
    await create_memories(store, "bob", [("c", draft("three"))])
    await delete_memory(store, "alice", "a")
    assert sorted((await queued(store)).values()) == ["three", "two"]
    await erase_user(store.user_data, "bob")
    assert list((await queued(store)).values()) == ["two"]


async def test_an_approved_candidate_is_queued(store: SqlStore) -> None:
    (candidate,) = await propose_candidates(
        store, "alice", [CandidateDraft(candidate_id="c1", draft=draft("Is vegan"))]
    )
    assert await queued(store) == {}
    await approve_candidate(store, "alice", candidate.candidate_id, memory_id="m1")
    assert list((await queued(store)).values()) == ["Is vegan"]


async def test_one_process_holds_a_models_lease(store: SqlStore) -> None:
    embeddings = store.embeddings
    assert await embeddings.lease(MODEL, "first", seconds=30)
    assert await embeddings.lease(MODEL, "first", seconds=30)  # renewed
    assert not await embeddings.lease(MODEL, "second", seconds=30)
    assert await embeddings.lease("another-model", "second", seconds=30)
    assert (await embeddings.progress(MODEL)).holder == "first"
    await embeddings.release(MODEL, "first")
    assert await embeddings.lease(MODEL, "second", seconds=0.000001)
    await asyncio.sleep(0.01)  # the lease ran out: free for anyone
    assert await embeddings.lease(MODEL, "third", seconds=30)


async def test_a_new_model_backfills_what_it_may_compute(database: Database) -> None:
    plain = SqlStore(database)  # saved by a server without an embedder
    await create_memories(
        plain,
        "alice",
        [
            ("none", draft("no vector")),
            ("client", draft("a client's vector", vector=(1.0, 0.0), model="client")),
        ],
    )
    store = SqlStore(database, embed_later=True)
    await create_memories(store, "alice", [("old", draft("an older model's vector"))])
    old = await store.embeddings.pending(limit=10)
    await store.embeddings.store_vectors(
        [ComputedVector(p.memory_pk, p.user_id, p.version, Embedding("old", (1.0,))) for p in old]
    )
    assert await store.embeddings.lease("new", "me", seconds=30)
    first = await store.embeddings.backfill("new", scan=1)
    assert (first.through, first.done) == (1, first.last <= 1)
    rest = await store.embeddings.backfill("new", scan=10**9)
    assert (rest.through, rest.done) == (rest.last, True)
    assert first.queued + rest.queued == 2
    assert sorted((await queued(store)).values()) == ["an older model's vector", "no vector"]
    progress = await store.embeddings.progress("new")
    assert (progress.backfilled_through, progress.backfill_done) == (rest.last, True)
    assert progress.backfill_until == rest.last
    # Done: a further step walks nothing until a new lease.
    assert (await store.embeddings.backfill("new", scan=100)).queued == 0


class Flaky:
    """Refuses any text containing "poison"; ``down`` refuses everything."""

    model = MODEL
    dimensions = 8
    down: ClassVar[bool] = False
    calls: ClassVar[list[int]] = []

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.calls.append(len(texts))
        if self.down or any("poison" in t for t in texts):
            raise RuntimeError("refused")
        return HashingEmbedder(8).embed(texts)


async def run_worker(worker: EmbeddingWorker, until: asyncio.Event | None = None) -> None:
    """Run ``worker`` until its backlog is empty (or ``until`` is set)."""
    stopping = asyncio.Event()
    task = asyncio.create_task(worker.run(stopping))
    try:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if until is not None and until.is_set():
                break
    finally:
        stopping.set()
        await task


async def test_the_worker_drops_a_text_the_embedder_refuses_and_embeds_the_rest(
    store: SqlStore,
) -> None:
    Flaky.calls.clear()
    worker = EmbeddingWorker(store.embeddings, Flaky(), poll_seconds=0.01)
    await worker.start()
    store.vectors_queued = worker.queued
    await create_memories(
        store, "alice", [("a", draft("fine")), ("b", draft("poison")), ("c", draft("also fine"))]
    )
    settled = asyncio.Event()

    async def settle() -> None:
        assert await worker.settled("alice", timeout=5.0)
        settled.set()

    waiting = asyncio.create_task(settle())
    await run_worker(worker, settled)
    await waiting
    assert Flaky.calls[:4] == [3, 1, 1, 1]  # the batch, then one by one
    assert await queued(store) == {}
    assert (await store.memories.get_memory("alice", "a")).embedding == vector_of("fine")
    assert (await store.memories.get_memory("alice", "b")).embedding is None
    assert (await store.embeddings.progress(MODEL)).holder == ""  # released at the end


async def test_the_worker_keeps_the_backlog_while_the_embedder_is_down(store: SqlStore) -> None:
    Flaky.calls.clear()
    Flaky.down = True
    try:
        worker = EmbeddingWorker(store.embeddings, Flaky(), poll_seconds=0.01)
        await worker.start()
        store.vectors_queued = worker.queued
        await create_memories(store, "alice", [("a", draft("one")), ("b", draft("two"))])
        stopping = asyncio.Event()
        task = asyncio.create_task(worker.run(stopping))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if worker.failing:
                break
        assert worker.failing
        # Nobody waits for a provider that is down.
        assert await worker.settled("alice", timeout=5.0)
        assert len(await queued(store)) == 2
        Flaky.down = False
        for _ in range(500):  # the first retry comes after a second
            await asyncio.sleep(0.01)
            if not await queued(store):
                break
        stopping.set()
        await task
    finally:
        Flaky.down = False
    assert await queued(store) == {}
    assert (await store.memories.get_memory("alice", "b")).embedding == vector_of("two")
