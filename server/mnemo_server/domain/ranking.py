"""The recall ranking policy: deterministic, and the same on every backend.

What the store hands in (phase 2 contract):

- ``lexical``: the visible, unarchived entries whose search document matched
  ``text_search.fts5_match_expression`` / ``pg_tsquery_text`` for the query
  text, in any order: all of them, or a prefix of at least
  ``CANDIDATE_LIMIT`` of them under ``lexical_order_key`` (the SQL form of
  that key is in its docstring). Backend scores (bm25, ts_rank) are not
  needed and not used;
- ``semantic``: when the query is semantic, ``SemanticMatch(memory,
  cosine)`` for the top ``CANDIDATE_LIMIT`` entries of
  ``vectors.VectorIndex.top_k`` over the user's vectors of the query's model.

Why matched-term counts and not bm25/ts_rank: the backends' scores differ in
scale and in formula (bm25 is negative, lower-is-better and IDF-weighted;
ts_rank is positive and unweighted by corpus statistics), so any order built
on them differs between SQLite and PostgreSQL for the same fixture. The number
of distinct query terms an entry contains is computed here, in Python, from
the entry's text with the same normalization the index uses
(``text_search.matched_terms``), so it is identical on both backends; so is
every tie-break below.

The order:

1. relevance, the hit's ``score``: without ``semantic``, the fraction of the
   query's terms the entry contains (``matched / len(terms)``, in (0, 1]);
   with ``semantic``, reciprocal rank fusion (``RRF_K`` = 60) of the lexical
   rank (competition ranking by matched-term count: entries with the same
   count share a rank) and the semantic rank (competition ranking by cosine
   rounded to ``SIMILARITY_DIGITS`` digits), divided by its maximum so that
   it is in (0, 1]. Entries with no matched term are not lexical hits;
   entries at or below ``min_similarity`` are not semantic hits;
2. an *equal match* is an equal score after rounding to ``SCORE_DIGITS``
   digits: the same matched-term count without semantic, the same pair of
   ranks with it. Among equal matches, an entry scoped to the current
   conversation comes first;
3. then pinned entries;
4. then the most recently updated (``update_time`` descending);
5. then ``memory_id`` ascending.

Then hits scoring below ``min_score`` are dropped, the first ``max_results``
are kept and ranked 1, 2, 3, ...
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mnemo_server.domain.governance import Gate
from mnemo_server.domain.memory_models import (
    DEFAULT_RECALL_RESULTS,
    Memory,
    MemoryScope,
    RecallHit,
    RecallQuery,
    RecallScope,
    RecallSignal,
)
from mnemo_server.domain.text_search import matched_terms, query_terms

RRF_K = 60
"""The reciprocal rank fusion constant (Cormack et al.)."""

SCORE_DIGITS = 12
"""Scores equal after rounding to this many digits are an equal match."""

SIMILARITY_DIGITS = 9
"""Cosines equal after rounding to this many digits share a semantic rank."""

CANDIDATE_LIMIT = 200
"""The fewest candidates per list a store may cap at (see the module doc)."""

DEFAULT_MIN_SIMILARITY = 0.0
"""Vectors pointing away from the query (cosine <= 0) are not semantic hits."""


@dataclass(frozen=True)
class SemanticMatch:
    """An entry and the cosine similarity of its vector to the query's."""

    memory: Memory
    similarity: float


def visible(memory: Memory, query: RecallQuery) -> bool:
    """Whether a recall for ``query`` may return ``memory`` at all.

    Never archived entries; identity entries unless the scope filter is
    conversation-only; conversation entries only of the query's conversation
    (so never when the query names none) and unless the filter is
    identity-only. Stores filter the same way in SQL.
    """
    if memory.archived:
        return False
    if memory.scope is MemoryScope.IDENTITY:
        return query.scope is not RecallScope.CONVERSATION
    return (
        query.scope is not RecallScope.IDENTITY
        and query.conversation_id != ""
        and memory.conversation_id == query.conversation_id
    )


def in_current_conversation(memory: Memory, query: RecallQuery) -> bool:
    """Whether ``memory`` is scoped to the conversation the query is about."""
    return (
        memory.scope is MemoryScope.CONVERSATION
        and query.conversation_id != ""
        and memory.conversation_id == query.conversation_id
    )


def lexical_order_key(
    memory: Memory, matched: int, query: RecallQuery
) -> tuple[int, bool, bool, float, str]:
    """The order in which a capped lexical candidate list must be a prefix.

    In SQL: ``ORDER BY matched DESC, (scope = 'conversation' AND
    conversation_id = :conversation) DESC, pinned DESC, update_time DESC,
    memory_id ASC``, where ``matched`` is the expression given in
    ``text_search.matched_terms``.
    """
    return (
        -matched,
        not in_current_conversation(memory, query),
        not memory.pinned,
        -memory.update_time.timestamp(),
        memory.memory_id,
    )


def _competition_ranks(values: dict[str, float]) -> dict[str, int]:
    """1 + how many values are strictly greater (ties share a rank)."""
    ordered = sorted(values.values(), reverse=True)
    first_position: dict[float, int] = {}
    for position, value in enumerate(ordered, start=1):
        first_position.setdefault(value, position)
    return {key: first_position[value] for key, value in values.items()}


@dataclass
class _Candidate:
    memory: Memory
    matched: int = 0
    similarity: float | None = None
    score: float = 0.0


def _collect(
    query: RecallQuery,
    terms: tuple[str, ...],
    lexical: Iterable[Memory],
    semantic: Iterable[SemanticMatch],
    min_similarity: float,
) -> dict[str, _Candidate]:
    candidates: dict[str, _Candidate] = {}
    if terms:
        for memory in lexical:
            if memory.memory_id in candidates or not visible(memory, query):
                continue
            matched = matched_terms(terms, memory.text)
            if matched:
                candidates[memory.memory_id] = _Candidate(memory, matched)
    if query.semantic:
        for match in semantic:
            if match.similarity <= min_similarity or not visible(match.memory, query):
                continue
            entry = candidates.setdefault(match.memory.memory_id, _Candidate(match.memory))
            if entry.similarity is None or match.similarity > entry.similarity:
                entry.similarity = match.similarity
    return candidates


def _score(candidates: dict[str, _Candidate], terms: tuple[str, ...], semantic: bool) -> None:
    if not semantic:
        for entry in candidates.values():
            entry.score = entry.matched / len(terms)
        return
    lexical_ranks = _competition_ranks(
        {key: float(e.matched) for key, e in candidates.items() if e.matched}
    )
    semantic_ranks = _competition_ranks(
        {
            key: round(e.similarity, SIMILARITY_DIGITS)
            for key, e in candidates.items()
            if e.similarity is not None
        }
    )
    lists = (1 if terms else 0) + 1
    best = lists / (RRF_K + 1)
    for key, entry in candidates.items():
        fused = 0.0
        if key in lexical_ranks:
            fused += 1.0 / (RRF_K + lexical_ranks[key])
        if key in semantic_ranks:
            fused += 1.0 / (RRF_K + semantic_ranks[key])
        entry.score = fused / best


def _signals(entry: _Candidate, query: RecallQuery) -> tuple[RecallSignal, ...]:
    found: list[RecallSignal] = []
    if entry.matched:
        found.append(RecallSignal.LEXICAL)
    if entry.similarity is not None:
        found.append(RecallSignal.SEMANTIC)
    if in_current_conversation(entry.memory, query):
        found.append(RecallSignal.CONVERSATION_SCOPE)
    if entry.memory.pinned:
        found.append(RecallSignal.PINNED)
    return tuple(found)


def rank(
    query: RecallQuery,
    lexical: Iterable[Memory],
    semantic: Iterable[SemanticMatch] = (),
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> list[RecallHit]:
    """The final recall hits for ``query``, best first (see the module doc).

    ``semantic`` is ignored unless ``query.semantic``. Candidates that are not
    ``visible`` are dropped, duplicates (same ``memory_id``) are counted once.
    Pure and deterministic: the same inputs in any order give the same hits.
    Never raises for valid inputs.
    """
    terms = query_terms(query.text)
    candidates = _collect(query, terms, lexical, semantic, min_similarity)
    _score(candidates, terms, query.semantic)

    def order(entry: _Candidate) -> tuple[float, bool, bool, float, str]:
        memory = entry.memory
        return (
            -round(entry.score, SCORE_DIGITS),
            not in_current_conversation(memory, query),
            not memory.pinned,
            -memory.update_time.timestamp(),
            memory.memory_id,
        )

    ordered = sorted(candidates.values(), key=order)
    if query.min_score is not None:
        floor = query.min_score
        ordered = [e for e in ordered if e.score >= floor]
    limit = query.max_results if query.max_results > 0 else DEFAULT_RECALL_RESULTS
    return [
        RecallHit(entry.memory, entry.score, position, _signals(entry, query))
        for position, entry in enumerate(ordered[:limit], start=1)
    ]


@dataclass(frozen=True)
class RecallCandidates:
    """What one read found for a recall: the closed gate (then no entries),
    or the lexical and semantic candidates that ``rank`` orders."""

    gate: Gate | None = None
    lexical: tuple[Memory, ...] = ()
    semantic: tuple[SemanticMatch, ...] = ()
