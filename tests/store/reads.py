"""The two candidate lists of a recall, one at a time, through
``MemoryStore.recall_candidates`` (which reads the gate and both lists in
one read transaction)."""

from __future__ import annotations

from mnemo_server.domain.governance import Access
from mnemo_server.domain.memory_models import Embedding, Memory, RecallQuery
from mnemo_server.domain.ranking import SemanticMatch
from mnemo_server.store.interfaces import MemoryStore


async def lexical_candidates(
    store: MemoryStore, user_id: str, query: RecallQuery, *, limit: int
) -> list[Memory]:
    found = await store.recall_candidates(
        user_id, query, None, access=Access.RECALL, conversation_ids=(), limit=limit
    )
    assert found.gate is None, found.gate
    return list(found.lexical)


async def semantic_candidates(
    store: MemoryStore, user_id: str, query: RecallQuery, embedding: Embedding, *, limit: int
) -> list[SemanticMatch]:
    found = await store.recall_candidates(
        user_id, query, embedding, access=Access.RECALL, conversation_ids=(), limit=limit
    )
    assert found.gate is None, found.gate
    return list(found.semantic)
