"""Reading at a time: what was true then (``as_of``), and event-time ranges.

An entry was valid from its ``event_at`` until its ``valid_until`` (``NULL``:
still valid; see ``chains``). *As of* ``T`` the view holds the entries whose
validity contains ``T``: ``event_at <= T`` and (``valid_until`` is ``NULL`` or
after ``T``), archived or not. A deleted entry is in no view, past or
present (its row is gone); an update corrects an entry in every view (a view
shows each entry's current text). Without ``as_of`` an event-time range
narrows the live entries.

Recall in time (``recall_in_time``) reads the user's entries in the view
and ranks them as recall does (``domain.ranking``), with term statistics of
the view itself: the full-text index and the vector cache hold only live
entries, so this path reads every entry of the view (the user's, within the
visible conversations) instead of a bounded candidate set. Its cost grows
with the view, which is why only reads that ask for a time take it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, or_, select

from mnemo_server.domain.memory_models import Embedding, RecallQuery
from mnemo_server.domain.ranking import (
    CANDIDATE_LIMIT,
    NOTHING_NEAR,
    Ranked,
    TermStats,
    rank,
    visible_conversations,
    with_nearest,
)
from mnemo_server.domain.relevance import calibration_of
from mnemo_server.domain.text_search import query_terms
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.memories.vector_cache import UserVectors
from mnemo_server.store.rows import to_micros
from mnemo_server.store.schema import memories, memory_embeddings


def validity_contains(at: Any) -> ColumnElement[bool]:
    """The entries whose validity contains ``at`` (a bound parameter or value
    of epoch microseconds), archived or not."""
    return and_(
        memories.c.event_at <= at,
        or_(memories.c.valid_until.is_(None), memories.c.valid_until > at),
    )


def _in_view(user_id: str, query: RecallQuery, conversations: Sequence[str]) -> list[Any]:
    conditions: list[Any] = [
        memories.c.user_id == user_id,
        memories.c.conversation_id.in_(conversations),
    ]
    if query.as_of is not None:
        conditions.append(validity_contains(to_micros(query.as_of)))
    else:
        conditions.append(memories.c.archived_at.is_(None))
    if query.event_after is not None:
        conditions.append(memories.c.event_at >= to_micros(query.event_after))
    if query.event_before is not None:
        conditions.append(memories.c.event_at < to_micros(query.event_before))
    return conditions


def recall_in_time(
    conn: Connection,
    user_id: str,
    query: RecallQuery,
    embedding: Embedding | None,
    *,
    strict: bool = True,
) -> list[Ranked]:
    """The ranked entries of the view ``query`` asks for (``as_of`` and the
    event-time range), best first. Raises EMBEDDING_DIMENSION_MISMATCH
    (entry ``Part.QUERY_EMBEDDING``) when ``strict`` (``recall.semantic``)."""
    conversations = visible_conversations(query)
    if not conversations:
        return []
    conditions = _in_view(user_id, query, conversations)
    found = conn.execute(
        select(
            memories.c.memory_id,
            memories.c.conversation_id,
            memories.c.pinned,
            memories.c.updated_at,
            memories.c.search_document,
        ).where(*conditions)
    ).all()
    terms = query_terms(query.text)
    lookup = fts.term_lookup(user_id, conversations, terms)
    every = fts.candidates_of([tuple(row) for row in found], lookup)
    frequencies = Counter(term for c in every for term in c.matched)
    stats = TermStats(len(every), frequencies)
    chosen = [c for c in every if c.matched]
    nearest = NOTHING_NEAR
    if embedding is not None:
        by_id = {c.memory_id: c for c in every}
        vectors = _view_vectors(conn, conditions, embedding)
        nearest = (
            NOTHING_NEAR
            if vectors is None
            else vectors.search(embedding, CANDIDATE_LIMIT, conversations, strict=strict)
        )
        embedded = frozenset() if vectors is None else vectors.embedded
        chosen = with_nearest(
            chosen, nearest, lambda missing: [by_id[m] for m in missing], embedded.__contains__
        )
    return rank(
        query,
        terms,
        stats,
        chosen,
        calibration=calibration_of(query, embedding),
        nearest=nearest,
    )


def _view_vectors(
    conn: Connection, conditions: Sequence[Any], embedding: Embedding
) -> UserVectors | None:
    """The view's vectors of ``embedding``'s model (``None``: it has none),
    of the dimension most of them have: what live recall searches in its
    cached matrix (``vector_cache.UserVectors``, which skips invalid
    vectors), here over the view's vectors."""
    found = conn.execute(
        select(
            memories.c.memory_id,
            memories.c.conversation_id,
            memory_embeddings.c.vector,
            memory_embeddings.c.dimensions,
        )
        .select_from(memory_embeddings.join(memories))
        .where(*conditions, memory_embeddings.c.model == embedding.model)
    ).all()
    if not found:
        return None
    sizes = Counter(row.dimensions for row in found)
    dimensions = min(sizes, key=lambda size: (-sizes[size], size))
    return UserVectors.build(0, dimensions, (tuple(row[:3]) for row in found))
