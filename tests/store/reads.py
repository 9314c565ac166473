"""A recall through ``MemoryStore.recall`` (the gate, the candidates, the
ranking and the hits' entries in one read transaction)."""

from __future__ import annotations

from dataclasses import replace

from mnemo_server.domain.governance import Access
from mnemo_server.domain.memory_models import MAX_RECALL_RESULTS, Embedding, RecallHit, RecallQuery
from mnemo_server.store.composed import SqlStore


async def recall(
    store: SqlStore,
    user_id: str,
    query: RecallQuery,
    embedding: Embedding | None = None,
    *,
    limit: int = MAX_RECALL_RESULTS,
) -> list[RecallHit]:
    """The hits (at most ``limit``), the gate open."""
    found = await store.memories.recall(
        user_id,
        replace(query, max_results=limit),
        embedding,
        access=Access.RECALL,
        conversation_ids=(),
    )
    assert found.gate is None, found.gate
    return list(found.hits)


async def recalled_ids(
    store: SqlStore,
    user_id: str,
    query: RecallQuery,
    embedding: Embedding | None = None,
    *,
    limit: int = MAX_RECALL_RESULTS,
) -> list[str]:
    """The ids of ``recall``'s hits, best first."""
    return [
        hit.memory.memory_id for hit in await recall(store, user_id, query, embedding, limit=limit)
    ]
