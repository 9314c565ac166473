"""The recall ranking policy: deterministic, and the same on every backend.

Recall reads a bounded set of candidates (``store.memories.recall``) and ranks
them here, in Python, so that both backends order the same candidates the
same way. Nothing here reads a backend score (bm25, ts_rank): their scales
and formulas differ between SQLite and PostgreSQL.

**Term weights.** Each user's live entries have corpus statistics
(``TermStats``, kept by the store in the transaction of every write): how
many live entries there are (``entries``, N) and, per stem, how many of them
contain it (its document frequency, df). A query term's weight is its inverse
document frequency, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (BM25's), so a
word most entries share ("tea" in a tea drinker's memories) counts little and
a rare one (a name) counts much.

**Candidates** (``lexical_plan``): the query's terms that occur at all, rarest
first. The rarest of them, as long as the entries containing them add up to at
most ``FULL_BUDGET``, are *full* terms: every visible entry containing one of
them is a candidate. Of the next ``SAMPLED_TERMS`` terms (the common ones), the
``SAMPLE_SIZE`` newest visible entries containing any of them are candidates
(newest: the store's insertion order, the same on both backends). So the work
per call is bounded however many entries contain a common word; an entry that
contains only common terms, and is not among the newest containing them, is
not considered (it would score low anyway: common terms weigh little). When
every term is full (no ``LexicalPlan.sampled`` term), every matching entry is
a candidate. With a semantic query, the ``CANDIDATE_LIMIT`` entries nearest to
the query vector are candidates too.

**The order:**

1. relevance, the hit's ``score`` (``domain.relevance``): a calibrated,
   monotonic function of a fused score of the entry's lexical share (the
   share of the query's term weight that the entry contains: the sum of the
   weights of the query terms it contains over the sum of the weights of all
   query terms, in (0, 1]; 1 when it contains every term) and, with
   ``semantic``, its cosine to the query vector rounded to
   ``SIMILARITY_DIGITS`` digits (0 for an entry at or below
   ``min_similarity`` or without a vector of the query's model): the
   calibration's lexical weight x the share + the rest x the cosine; without
   query terms, the cosine alone. Scores, not ranks, are fused: a turn that
   only shares a rare name gets the name's share, not the best lexical rank,
   and entries with equal lexical shares are told apart by their cosines.
   Entries with no query term are not lexical hits; entries at or below
   ``min_similarity`` are not semantic hits;
2. an *equal match* is an equal score after rounding to ``SCORE_DIGITS``
   digits. Among equal matches, an entry scoped to the current conversation
   comes first;
3. then pinned entries;
4. then the most recently updated;
5. then ``memory_id`` ascending.

Then, when a minimum relevance applies (the query's ``min_score``; unset:
the calibration's default, ``relevance.DEFAULT_MIN_RELEVANCE`` for a
calibrated recall, none for an uncalibrated one), a query that the
calibration's gate (``relevance.QueryGate``) judges to be about nothing the
user saved gets no hits among the entries with a vector (an entry without
one yet is judged by its words alone), and hits below the minimum are
dropped; the first ``max_results`` are kept and ranked 1, 2, 3, ...
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mnemo_server.domain.governance import Gate
from mnemo_server.domain.memory_models import (
    DEFAULT_RECALL_RESULTS,
    Memory,
    RecallHit,
    RecallQuery,
    RecallScope,
    RecallSignal,
)
from mnemo_server.domain.relevance import LEXICAL, NO_FIELD, Calibration, QueryField

SCORE_DIGITS = 12
"""Scores equal after rounding to this many digits are an equal match."""

SIMILARITY_DIGITS = 9
"""Cosines equal after rounding to this many digits share a semantic rank."""

CANDIDATE_LIMIT = 100
"""Semantic candidates: the entries nearest to the query vector."""

FULL_BUDGET = 200
"""Full terms: rarest first, while the entries containing them add up to at
most this many."""

SAMPLED_TERMS = 4
"""Common terms (after the full ones) whose newest entries are candidates."""

SAMPLE_SIZE = 100
"""The newest visible entries containing a sampled term that are candidates."""

DEFAULT_MIN_SIMILARITY = 0.0
"""Vectors pointing away from the query (cosine <= 0) are not semantic hits."""


@dataclass(frozen=True)
class TermStats:
    """A user's corpus statistics: ``entries`` live entries, of which
    ``frequencies[term]`` contain ``term`` (absent: none)."""

    entries: int
    frequencies: Mapping[str, int]

    def frequency(self, term: str) -> int:
        return self.frequencies.get(term, 0)

    def weight(self, term: str) -> float:
        """The term's inverse document frequency (see the module doc); > 0."""
        df = min(self.frequency(term), self.entries)
        return math.log(1.0 + (self.entries - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class LexicalPlan:
    """Which entries are lexical candidates (see the module doc)."""

    full: tuple[str, ...] = ()
    sampled: tuple[str, ...] = ()
    """None: every entry containing a query term is a candidate."""


def lexical_plan(terms: Sequence[str], stats: TermStats) -> LexicalPlan:
    """The full and sampled terms of ``terms`` (``text_search.query_terms``)
    under ``stats``; terms no entry contains are neither."""
    present = sorted((stats.frequency(t), t) for t in dict.fromkeys(terms) if stats.frequency(t))
    full: list[str] = []
    total = 0
    for df, term in present:
        if total + df > FULL_BUDGET:
            break
        full.append(term)
        total += df
    rest = [term for _, term in present[len(full) :]]
    return LexicalPlan(tuple(full), tuple(rest[:SAMPLED_TERMS]))


@dataclass(slots=True)
class Candidate:
    """What ranking needs of one entry: ``conversation_id`` (``""``: identity
    scope), ``pinned``, ``update_micros`` (its update time in epoch
    microseconds), the query terms it contains (``matched``), its cosine
    to the query vector when it was a semantic candidate, and whether it has
    no vector of the query's model at all (``unembedded``: saved a moment
    ago and not embedded yet, or refused by the embedder)."""

    memory_id: str
    conversation_id: str
    pinned: bool
    update_micros: int
    matched: frozenset[str] = frozenset()
    similarity: float | None = None
    unembedded: bool = False
    score: float = field(default=0.0, compare=False)


def _no_cosines(memory_ids: Sequence[str]) -> Mapping[str, float]:
    return {}


@dataclass(frozen=True)
class Nearest:
    """What exact vector search found for a query vector among the entries
    it searched (the visible ones with a vector of its model):
    ``similarities``, the nearest ones' cosines by ``memory_id``; the
    query's ``field`` over all of them (``relevance.QueryField``); and
    ``cosines``, the exact cosines of the given entries that were searched
    (the others left out)."""

    similarities: Mapping[str, float] = field(default_factory=dict)
    field: QueryField = NO_FIELD
    cosines: Callable[[Sequence[str]], Mapping[str, float]] = _no_cosines


NOTHING_NEAR = Nearest()


def with_nearest(
    lexical: Iterable[Candidate],
    nearest: Nearest,
    others: Callable[[list[str]], Iterable[Candidate]],
    embedded: Callable[[str], bool],
) -> list[Candidate]:
    """The candidates of a semantic query, live or as of a time: the
    ``lexical`` ones, marked ``unembedded`` when they have no vector of the
    query's model (``embedded`` tells), then the ``nearest`` entries that
    are not among them, read by ``others`` (given their ids); each with its
    exact cosine (``Nearest.cosines``: a lexical candidate outside the
    nearest ones has its cosine too, not 0)."""
    candidates = list(lexical)
    for candidate in candidates:
        candidate.unembedded = not embedded(candidate.memory_id)
    known = {c.memory_id for c in candidates}
    wanted = [memory_id for memory_id in nearest.similarities if memory_id not in known]
    candidates += others(wanted)
    cosines = nearest.cosines([c.memory_id for c in candidates])
    for candidate in candidates:
        candidate.similarity = cosines.get(candidate.memory_id)
    return candidates


def visible_conversations(query: RecallQuery) -> tuple[str, ...]:
    """The ``conversation_id`` values of the entries ``query`` may return
    (``""`` stands for identity entries): identity entries unless the scope
    filter is conversation-only; the query's conversation's entries (when it
    names one) unless the filter is identity-only. Never archived entries."""
    current = (query.conversation_id,) if query.conversation_id else ()
    if query.scope is RecallScope.IDENTITY:
        return ("",)
    if query.scope is RecallScope.CONVERSATION:
        return current
    return ("", *current)


def _in_current_conversation(candidate: Candidate, query: RecallQuery) -> bool:
    return query.conversation_id != "" and candidate.conversation_id == query.conversation_id


def _lexical_shares(
    candidates: Iterable[Candidate], terms: Sequence[str], stats: TermStats
) -> dict[str, float]:
    """Each candidate's lexical share (module doc), by ``memory_id``; the
    weights are summed in the query's term order, so the same terms give the
    same float in every process (a set's order depends on string hashing)."""
    weights = {t: stats.weight(t) for t in dict.fromkeys(terms)}
    total = sum(weights.values())
    # Candidates share few distinct sets of matched terms: one sum per set.
    share_of: dict[frozenset[str], float] = {}
    shares: dict[str, float] = {}
    for c in candidates:
        matched = c.matched
        if not matched:
            continue
        share = share_of.get(matched)
        if share is None:
            share = sum(w for t, w in weights.items() if t in matched) / total
            share_of[matched] = share
        shares[c.memory_id] = share
    return shares


def _score(
    candidates: dict[str, Candidate],
    terms: Sequence[str],
    stats: TermStats,
    semantic: bool,
    min_similarity: float,
    calibration: Calibration,
) -> tuple[list[Candidate], float]:
    """The candidates that are hits, each with its ``score`` (relevance),
    and the best fused score of the hits with a vector (0 without any)."""
    shares = _lexical_shares(candidates.values(), terms, stats) if terms else {}
    relevance = calibration.relevance_of(stats.entries)
    fused = calibration.fused
    if not semantic:
        for key, lexical_share in shares.items():
            candidates[key].score = relevance(fused(lexical_share, None))
        return [candidates[key] for key in shares], 0.0
    lexical_relevance = LEXICAL.relevance_of(stats.entries)
    hits = []
    best = 0.0
    for key, entry in candidates.items():
        share = shares.get(key)
        similarity = entry.similarity
        similar = (
            round(similarity, SIMILARITY_DIGITS)
            if similarity is not None and similarity > min_similarity
            else None
        )
        if share is None and similar is None:
            continue
        if entry.unembedded:
            # No vector to weigh yet: judged by its words, as lexical recall is.
            entry.score = lexical_relevance(LEXICAL.fused(share or 0.0, None))
        else:
            # Without query terms there is nothing lexical to weigh: the cosine alone.
            lexical = (share or 0.0) if terms else None
            score = fused(lexical, similar)
            entry.score = relevance(score)
            if score > best:
                best = score
        hits.append(entry)
    return hits, best


_ROUNDING_MARGIN = 10.0 ** -(SCORE_DIGITS - 1)
"""More than rounding to ``SCORE_DIGITS`` digits can move a score."""


def _contenders(hits: list[Candidate], limit: int) -> list[Candidate]:
    """The hits that can be among the first ``limit`` (more than ``limit``
    hits): those whose rounded score reaches the ``limit``-th best rounded
    score, since the score is the order's first key. Rounding is monotonic,
    so only scores within ``_ROUNDING_MARGIN`` below the ``limit``-th best
    raw score need rounding (``round`` of a float is the costly part)."""
    kth = heapq.nlargest(limit, [e.score for e in hits])[-1]
    cut = round(kth, SCORE_DIGITS)
    return [
        e
        for e in hits
        if e.score >= kth
        or (e.score > kth - _ROUNDING_MARGIN and round(e.score, SCORE_DIGITS) >= cut)
    ]


@dataclass(frozen=True)
class Ranked:
    """A candidate that made the list, with its score and signals."""

    candidate: Candidate
    score: float
    signals: tuple[RecallSignal, ...]


def _signals(
    entry: Candidate, query: RecallQuery, min_similarity: float
) -> tuple[RecallSignal, ...]:
    found: list[RecallSignal] = []
    if entry.matched:
        found.append(RecallSignal.LEXICAL)
    if query.semantic and entry.similarity is not None and entry.similarity > min_similarity:
        found.append(RecallSignal.SEMANTIC)
    if _in_current_conversation(entry, query):
        found.append(RecallSignal.CONVERSATION_SCOPE)
    if entry.pinned:
        found.append(RecallSignal.PINNED)
    return tuple(found)


def rank(
    query: RecallQuery,
    terms: Sequence[str],
    stats: TermStats,
    candidates: Iterable[Candidate],
    *,
    calibration: Calibration = LEXICAL,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    nearest: Nearest = NOTHING_NEAR,
) -> list[Ranked]:
    """The best candidates for ``query`` (its ``terms``:
    ``text_search.query_terms``), best first (see the module doc), scored
    by ``calibration`` (``relevance.calibration`` of the query vector's
    model; lexical recall's by default) with the query's field of
    ``nearest`` (the vector search that found the semantic candidates).

    Similarities count only when ``query.semantic``. Candidates outside
    ``visible_conversations`` are dropped, duplicates (same ``memory_id``)
    are counted once. Pure and deterministic: the same inputs in any order
    give the same list. Never raises for valid inputs.
    """
    allowed = set(visible_conversations(query))
    merged: dict[str, Candidate] = {}
    for candidate in candidates:
        if candidate.conversation_id not in allowed:
            continue
        known = merged.get(candidate.memory_id)
        if known is None:
            merged[candidate.memory_id] = candidate
            continue
        known.matched |= candidate.matched
        known.unembedded = known.unembedded and candidate.unembedded
        if candidate.similarity is not None and (
            known.similarity is None or candidate.similarity > known.similarity
        ):
            known.similarity = candidate.similarity
    hits, best = _score(merged, terms, stats, bool(query.semantic), min_similarity, calibration)

    def order(entry: Candidate) -> tuple[float, bool, bool, int, str]:
        return (
            -round(entry.score, SCORE_DIGITS),
            not _in_current_conversation(entry, query),
            not entry.pinned,
            -entry.update_micros,
            entry.memory_id,
        )

    floor = calibration.default_min if query.min_score is None else query.min_score
    if floor > 0:
        gate = calibration.gate
        if gate is not None and not gate.admits(best, nearest.field, stats.entries):
            # About nothing the user saved (``relevance.QueryGate``), as far as
            # the vectors tell: only entries without one, judged by their words.
            hits = [e for e in hits if e.unembedded]
        hits = [e for e in hits if e.score >= floor]
    limit = query.max_results if query.max_results > 0 else DEFAULT_RECALL_RESULTS
    if len(hits) > limit:
        hits = _contenders(hits, limit)
    # sorted(hits, key=order)[:limit], without ordering the rest.
    best_first = heapq.nsmallest(limit, hits, key=order)
    return [Ranked(e, e.score, _signals(e, query, min_similarity)) for e in best_first]


def recall_hits(ranked: Sequence[Ranked], memories: Mapping[str, Memory]) -> list[RecallHit]:
    """``ranked`` as hits, with the entries ``memories`` (by ``memory_id``);
    an entry missing there is left out and the ranks close up."""
    found = [r for r in ranked if r.candidate.memory_id in memories]
    return [
        RecallHit(memories[r.candidate.memory_id], r.score, position, r.signals)
        for position, r in enumerate(found, start=1)
    ]


@dataclass(frozen=True)
class RecallResult:
    """What one read found for a recall: the closed gate (then no hits), or
    the hits, best first."""

    gate: Gate | None = None
    hits: tuple[RecallHit, ...] = ()
