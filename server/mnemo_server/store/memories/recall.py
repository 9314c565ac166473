"""Recall in one read transaction: the term statistics, a bounded set of
candidates (lexical ones from the full-text index, semantic ones from exact
vector search over the cached matrix, ``vector_cache``), the ranking
(``domain.ranking``), then the entries of the hits.

Candidates are compact rows (id, conversation, pinned, update time and the
indexed document); only the entries that make the list are read whole.
Visibility (``domain.ranking.visible_conversations``) is part of each read:
the index terms carry the entry's visibility key, the vector matrix each
entry's conversation.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, func, literal_column, select

from mnemo_server.domain.memory_models import Embedding, Memory, RecallHit, RecallQuery
from mnemo_server.domain.ranking import (
    CANDIDATE_LIMIT,
    NOTHING_NEAR,
    Candidate,
    Nearest,
    TermStats,
    lexical_plan,
    rank,
    recall_hits,
    visible_conversations,
    with_nearest,
)
from mnemo_server.domain.relevance import calibration_of
from mnemo_server.domain.text_search import query_terms
from mnemo_server.store.engine.dialect import list_elements
from mnemo_server.store.engine.statements import Statement, dialect_of, list_parameter
from mnemo_server.store.memories import rows, timeline
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.memories.vector_cache import UserVectors, VectorCache
from mnemo_server.store.schema import ID, memories, memory_embeddings, memory_user_state


def recall(
    conn: Connection,
    user_id: str,
    query: RecallQuery,
    embedding: Embedding | None,
    cache: VectorCache,
) -> list[RecallHit]:
    """The hits for ``query`` (``domain.ranking``), best first; semantic
    candidates only with ``embedding`` (the query's vector: the request's
    ``query_embedding``, else the server's embedder's). Raises
    EMBEDDING_DIMENSION_MISMATCH (field ``query_embedding.values``) when the
    request's vector has another dimension than the stored vectors of its
    model; a vector of the server's embedder that does not fit them finds
    no semantic candidates (the fault is not the caller's)."""
    strict = query.query_embedding is not None
    if query.in_time:
        ranked = timeline.recall_in_time(conn, user_id, query, embedding, strict=strict)
        return recall_hits(ranked, entries(conn, user_id, [r.candidate.memory_id for r in ranked]))
    conversations = visible_conversations(query)
    if not conversations:
        return []
    terms = query_terms(query.text)
    # The user's entry count weighs in the relevance (``domain.relevance``).
    stats = fts.term_stats(conn, user_id, terms) if terms or embedding else TermStats(0, {})
    candidates: list[Candidate] = []
    nearest = NOTHING_NEAR
    if terms:
        plan = lexical_plan(terms, stats)
        candidates += fts.lexical_candidates(conn, user_id, conversations, terms, plan)
    if embedding is not None:
        vectors = _user_vectors(conn, user_id, embedding.model, cache)
        nearest = _nearest(vectors, conversations, embedding, CANDIDATE_LIMIT, strict=strict)
        embedded = frozenset() if vectors is None else vectors.embedded
        candidates = with_nearest(
            candidates,
            nearest,
            lambda missing: fts.candidates_by_id(conn, user_id, conversations, terms, missing),
            embedded.__contains__,
        )
    ranked = rank(
        query,
        terms,
        stats,
        candidates,
        calibration=calibration_of(query, embedding),
        nearest=nearest,
    )
    return recall_hits(ranked, entries(conn, user_id, [r.candidate.memory_id for r in ranked]))


@functools.cache
def _entries_statement(dialect: str) -> Statement:
    ids = list_elements(dialect, "ids", ID)
    return Statement(
        select(
            *memories.c,
            literal_column("NULL").label("embedding_model"),
            literal_column("NULL").label("embedding_vector"),
        ).where(memories.c.user_id == bindparam("user_id"), memories.c.memory_id.in_(ids))
    )


def entries(conn: Connection, user_id: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
    """The entries ``memory_ids`` of ``user_id`` (without vectors), by id."""
    if not memory_ids:
        return {}
    dialect = dialect_of(conn)
    ids = list_parameter(dialect, memory_ids)
    found = _entries_statement(dialect).all(conn, user_id=user_id, ids=ids)
    return {row.memory_id: rows.memory(row) for row in found}


_VECTORS_VERSION = Statement(
    select(memory_user_state.c.vectors_version).where(
        memory_user_state.c.user_id == bindparam("user_id")
    )
)
_JOINED = memory_embeddings.join(memories)  # on the foreign key: (user_id, memory_pk)
_LIVE_VECTORS = (
    memory_embeddings.c.user_id == bindparam("user_id"),
    memory_embeddings.c.model == bindparam("model"),
    memories.c.user_id == bindparam("user_id"),
    memories.c.archived_at.is_(None),
)
# The model's dimension, as most of the user's vectors of it have it (the
# others are skipped as invalid: ``UserVectors.build``).
_DIMENSIONS = Statement(
    select(memory_embeddings.c.dimensions)
    .select_from(_JOINED)
    .where(*_LIVE_VECTORS)
    .group_by(memory_embeddings.c.dimensions)
    .order_by(func.count().desc(), memory_embeddings.c.dimensions)
    .limit(1)
)
_VECTORS = Statement(
    select(memories.c.memory_id, memories.c.conversation_id, memory_embeddings.c.vector)
    .select_from(_JOINED)
    .where(*_LIVE_VECTORS),
    binary=True,
)


def _user_vectors(
    conn: Connection, user_id: str, model: str, cache: VectorCache
) -> UserVectors | None:
    """The user's live vectors of ``model`` as of this transaction (cached)."""
    version = _VECTORS_VERSION.scalar(conn, user_id=user_id)
    if version is None:
        return None
    cached = cache.get(user_id, model, version)
    if cached is not None:
        return cached
    dimensions = _DIMENSIONS.scalar(conn, user_id=user_id, model=model)
    if dimensions is None:
        vectors = UserVectors.build(version, 1, [])
    else:
        found = _VECTORS.tuples(conn, user_id=user_id, model=model)
        vectors = UserVectors.build(version, dimensions, found)
        cache.report_skipped(user_id, model, vectors)
    cache.put(user_id, model, vectors)
    return vectors


def semantic(
    conn: Connection,
    user_id: str,
    conversations: Sequence[str],
    embedding: Embedding,
    limit: int,
    cache: VectorCache,
    *,
    strict: bool = True,
) -> dict[str, float]:
    """The exact top ``limit`` live entries of ``conversations`` by cosine
    to ``embedding`` (ties: ``memory_id`` ascending), with their cosines.
    Raises EMBEDDING_DIMENSION_MISMATCH (entry ``Part.QUERY_EMBEDDING``)
    when ``strict`` (a caller's vector); otherwise a vector of another
    dimension finds nothing."""
    vectors = _user_vectors(conn, user_id, embedding.model, cache)
    return dict(_nearest(vectors, conversations, embedding, limit, strict=strict).similarities)


def _nearest(
    vectors: UserVectors | None,
    conversations: Sequence[str],
    embedding: Embedding,
    limit: int,
    *,
    strict: bool,
) -> Nearest:
    if limit <= 0 or vectors is None:
        return NOTHING_NEAR
    return vectors.search(embedding, limit, conversations, strict=strict)
