"""Recall candidates: the lexical ones from the full-text index, the
semantic ones from exact vector search (``vector_cache``).

Both apply ``domain.ranking.visible`` in the query: never archived entries;
identity entries (conversation ``""``) unless the scope filter is
conversation-only; the query's conversation's entries unless it is
identity-only (``visible_conversations``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, UnaryExpression, select

from mnemo_server.domain.embedding import dimension_mismatch
from mnemo_server.domain.memory_models import Embedding, Memory, RecallQuery, RecallScope
from mnemo_server.domain.ranking import SemanticMatch
from mnemo_server.store import memory_convert as rows
from mnemo_server.store import memory_text_index as fts
from mnemo_server.store.schema import ID, memories, memory_embeddings, memory_user_state
from mnemo_server.store.vector_cache import UserVectors, VectorCache

_CHUNK = 500


def visible_conversations(query: RecallQuery) -> tuple[str, ...]:
    """The ``conversation_id`` values of the entries ``query`` may return
    (``""`` stands for identity entries)."""
    current = (query.conversation_id,) if query.conversation_id else ()
    if query.scope is RecallScope.IDENTITY:
        return ("",)
    if query.scope is RecallScope.CONVERSATION:
        return current
    return ("", *current)


def lexical(conn: Connection, user_id: str, query: RecallQuery, limit: int) -> list[Memory]:
    """``MemoryStore.lexical_candidates``: the first ``limit`` visible
    matches in ``domain.ranking.lexical_order_key`` order (without vectors:
    ``embedding`` is ``None``)."""
    match = fts.lexical_match(conn, query.text)
    conversations = visible_conversations(query)
    if match is None or not conversations or limit <= 0:
        return []
    order: list[UnaryExpression[Any]] = [match.matched.desc()]
    if query.conversation_id:
        order.append(fts.in_conversation(query.conversation_id).desc())
    found = conn.execute(
        select(*memories.c)
        .select_from(match.source)
        .where(
            match.condition,
            memories.c.user_id == user_id,
            memories.c.archived_at.is_(None),
            memories.c.conversation_id.in_(conversations),
        )
        .order_by(
            *order,
            memories.c.pinned.desc(),
            memories.c.updated_at.desc(),
            fts.by_id(conn, memories.c.memory_id).asc(),
        )
        .limit(limit)
    )
    return [rows.memory(row) for row in found]


def _user_vectors(
    conn: Connection, user_id: str, model: str, cache: VectorCache
) -> UserVectors | None:
    """The user's live vectors of ``model`` as of this transaction (cached)."""
    version = conn.execute(
        select(memory_user_state.c.vectors_version).where(memory_user_state.c.user_id == user_id)
    ).scalar_one_or_none()
    if version is None:
        return None
    cached = cache.get(user_id, model, version)
    if cached is not None:
        return cached
    where = (
        memory_embeddings.c.user_id == user_id,
        memory_embeddings.c.model == model,
        memories.c.user_id == user_id,
        memories.c.archived_at.is_(None),
    )
    dimensions = conn.execute(
        select(memory_embeddings.c.dimensions)
        .select_from(
            memory_embeddings.join(memories, memories.c.id == memory_embeddings.c.memory_pk)
        )
        .where(*where)
        .limit(1)
    ).scalar_one_or_none()
    if dimensions is None:
        vectors = UserVectors.build(version, 1, [])
    else:
        found = conn.execute(
            select(memories.c.memory_id, memories.c.conversation_id, memory_embeddings.c.vector)
            .select_from(
                memory_embeddings.join(memories, memories.c.id == memory_embeddings.c.memory_pk)
            )
            .where(*where)
        )
        vectors = UserVectors.build(version, dimensions, (tuple(row) for row in found))
    cache.put(user_id, model, vectors)
    return vectors


def _exact(
    conn: Connection, user_id: str, memory_ids: Sequence[str], query: Sequence[float]
) -> list[SemanticMatch]:
    """The entries ``memory_ids`` (without vectors) and the exact cosines of
    their stored vectors to ``query`` (float64 arithmetic)."""
    entries: list[Memory] = []
    vectors: list[bytes] = []
    for start in range(0, len(memory_ids), _CHUNK):
        found = conn.execute(
            select(*memories.c, memory_embeddings.c.vector)
            .select_from(
                memories.join(memory_embeddings, memory_embeddings.c.memory_pk == memories.c.id)
            )
            .where(
                memories.c.user_id == user_id,
                fts.one_of(conn, memories.c.memory_id, memory_ids[start : start + _CHUNK], ID),
            )
        )
        for row in found:
            entries.append(rows.memory(row._mapping))
            vectors.append(row.vector)
    if not entries:
        return []
    matrix = np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(entries), -1)
    stored = matrix.astype(np.float64)
    unit = np.asarray(query, dtype=np.float64)
    unit /= np.linalg.norm(unit)
    cosines = (stored @ unit) / np.linalg.norm(stored, axis=1)
    return [
        SemanticMatch(entry, max(-1.0, min(1.0, float(cosine))))
        for entry, cosine in zip(entries, cosines, strict=True)
    ]


def semantic(
    conn: Connection,
    user_id: str,
    query: RecallQuery,
    embedding: Embedding,
    limit: int,
    cache: VectorCache,
) -> list[SemanticMatch]:
    """``MemoryStore.semantic_candidates``: the exact top ``limit`` visible
    entries by cosine, best first (ties: ``memory_id`` ascending). Raises
    EMBEDDING_DIMENSION_MISMATCH (field ``query_embedding.values``)."""
    if limit <= 0:
        return []
    vectors = _user_vectors(conn, user_id, embedding.model, cache)
    if vectors is None or not vectors.memory_ids:
        return []
    if embedding.dimensions != vectors.dimensions:
        raise dimension_mismatch(
            "query_embedding.values", expected=vectors.dimensions, got=embedding.dimensions
        )
    if not any(embedding.values):
        return []
    nearest = vectors.nearest(embedding.values, limit, visible_conversations(query))
    matches = _exact(conn, user_id, nearest, embedding.values)
    matches.sort(key=lambda match: (-match.similarity, match.memory.memory_id))
    return matches[:limit]
