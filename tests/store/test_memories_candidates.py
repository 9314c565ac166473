"""Extraction candidates (MemoryStore): propose, list, approve into an entry,
reject; on every backend."""

from __future__ import annotations

import pytest

from mnemo_server.domain.errors import AlreadyExists, FailedPrecondition, NotFound
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    CandidateState,
    Embedding,
    MemoryDraft,
    MemoryListQuery,
    MemorySource,
)
from mnemo_server.store.composed import SqlStore
from tests.store.memory_samples import draft, save
from tests.store.samples import idem
from tests.store.writes import approve_candidate, propose_candidates, reject_candidate


@pytest.fixture
def store(sql_store: SqlStore) -> SqlStore:
    return sql_store


def candidate(n: int, item: MemoryDraft) -> CandidateDraft:
    return CandidateDraft(
        candidate_id=f"c{n}",
        draft=item,
        conversation_id="conv",
        run_id="run-7",
        turn=n,
        extractor="pattern:preference",
    )


async def test_propose_list_approve_reject(store: SqlStore) -> None:
    proposed = await propose_candidates(
        store,
        "alice",
        [
            candidate(1, draft("Likes green tea", key="drink", metadata={"why": "said so"})),
            candidate(2, draft("Is vegetarian", vector=[0.5, 0.5])),
            candidate(3, draft("Lives in Oslo")),
        ],
    )
    assert [c.state for c in proposed] == [CandidateState.PENDING] * 3
    first = proposed[0]
    assert (first.conversation_id, first.run_id, first.turn, first.extractor) == (
        "conv",
        "run-7",
        1,
        "pattern:preference",
    )
    assert first.draft.metadata == {"why": "said so"} and first.saved_memory_id == ""
    assert proposed[1].draft.embedding == Embedding("test-model", (0.5, 0.5))
    pending = await store.memories.list_candidates(
        "alice", include_resolved=False, limit=10, after=None
    )
    assert {c.candidate_id for c in pending.items} == {"c1", "c2", "c3"}

    await save(store, "old", draft("Likes coffee", key="drink"))
    memory, approved = await approve_candidate(store, "alice", "c1", memory_id="m1")
    assert (memory.memory_id, memory.text, memory.key) == ("m1", "Likes green tea", "drink")
    assert memory.source is MemorySource.EXTRACTOR and memory.metadata == {"why": "said so"}
    assert (approved.state, approved.saved_memory_id) == (CandidateState.APPROVED, "m1")
    assert (await store.memories.get_memory("alice", "old")).archived  # the key superseded it
    again = await approve_candidate(store, "alice", "c1", memory_id="other")
    assert again == (memory, approved)
    await approve_candidate(store, "alice", "c2", memory_id="m2")  # answers without the vector
    assert (await store.memories.get_memory("alice", "m2")).embedding == Embedding(
        "test-model", (0.5, 0.5)
    )

    rejected = await reject_candidate(store, "alice", "c3")
    assert rejected.state is CandidateState.REJECTED
    assert await reject_candidate(store, "alice", "c3") == rejected
    with pytest.raises(FailedPrecondition) as resolved:
        await approve_candidate(store, "alice", "c3", memory_id="m3")
    assert resolved.value.reason == "CANDIDATE_RESOLVED"
    with pytest.raises(FailedPrecondition):
        await reject_candidate(store, "alice", "c1")

    assert (
        await store.memories.list_candidates("alice", include_resolved=False, limit=10, after=None)
    ).items == ()
    everything = await store.memories.list_candidates(
        "alice", include_resolved=True, limit=2, after=None
    )
    rest = await store.memories.list_candidates(
        "alice", include_resolved=True, limit=2, after=everything.next_after
    )
    assert len(everything.items + rest.items) == 3 and rest.next_after is None
    live = await store.memories.list_memories("alice", MemoryListQuery(limit=10))
    assert [m.memory_id for m in live.items] == ["m2", "m1"]


async def test_candidate_errors_and_idempotent_proposals(store: SqlStore) -> None:
    key = idem("propose-1", scope="ProposeMemoryCandidates")
    first = await propose_candidates(store, "alice", [candidate(1, draft("a"))], idempotency=key)
    assert (
        await propose_candidates(store, "alice", [candidate(1, draft("a"))], idempotency=key)
        == first
    )
    with pytest.raises(AlreadyExists):
        await propose_candidates(store, "alice", [candidate(1, draft("b"))])
    with pytest.raises(AlreadyExists):
        await propose_candidates(
            store, "alice", [candidate(5, draft("x")), candidate(5, draft("y"))]
        )
    with pytest.raises(NotFound):
        await approve_candidate(store, "alice", "nope", memory_id="m1")
    with pytest.raises(NotFound):
        await reject_candidate(store, "bob", "c1")
    await save(store, "taken", draft("x"))
    with pytest.raises(AlreadyExists):
        await approve_candidate(store, "alice", "c1", memory_id="taken")
    # The failed approval changed nothing.
    (still,) = (
        await store.memories.list_candidates("alice", include_resolved=False, limit=5, after=None)
    ).items
    assert still.state is CandidateState.PENDING
