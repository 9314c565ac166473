"""The recall ranking policy (the vector search: ``test_vector_cache.py``)."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mnemo_server.domain.memory_models import RecallQuery, RecallScope, RecallSignal
from mnemo_server.domain.ranking import (
    FULL_BUDGET,
    SAMPLED_TERMS,
    SCORE_DIGITS,
    Candidate,
    LexicalPlan,
    Nearest,
    Ranked,
    TermStats,
    _contenders,
    lexical_plan,
    rank,
    visible_conversations,
)
from mnemo_server.domain.relevance import (
    DEFAULT_MIN_RELEVANCE,
    FUSED_DEFAULT_MODEL,
    LEXICAL,
    UNCALIBRATED,
    QueryField,
    calibration,
)
from mnemo_server.domain.text_search import query_terms, stems
from mnemo_server.domain.vectors import decode_vector, encode_vector

LEXICAL_WEIGHT = UNCALIBRATED.lexical_weight

T0 = 1_767_225_600_000_000  # 2026-01-01 in epoch microseconds


@dataclass(frozen=True)
class Entry:
    memory_id: str
    text: str
    age: int = 0
    """Minutes before the newest."""
    conversation: str = ""
    pinned: bool = False


def mem(
    memory_id: str, text: str, *, age: int = 0, conversation: str = "", pinned: bool = False
) -> Entry:
    return Entry(memory_id, text, age, conversation, pinned)


def stats_of(entries: list[Entry]) -> TermStats:
    """The statistics a store keeps for these live entries."""
    counts: Counter[str] = Counter()
    for e in entries:
        counts.update(set(stems(e.text)))
    return TermStats(len(entries), dict(counts))


def candidate(e: Entry, query: RecallQuery, similarity: float | None = None) -> Candidate:
    matched = set(stems(e.text)) & set(query_terms(query.text))
    return Candidate(
        e.memory_id,
        e.conversation,
        e.pinned,
        T0 - e.age * 60_000_000,
        frozenset(matched),
        similarity,
    )


def ranked(
    query: RecallQuery,
    entries: list[Entry],
    semantic: list[tuple[Entry, float]] = (),  # type: ignore[assignment]
    *,
    corpus: list[Entry] | None = None,
) -> list[Ranked]:
    """``rank`` over ``entries`` as lexical candidates and ``semantic`` ones,
    with the statistics of ``corpus`` (default: every entry named)."""
    everyone = corpus if corpus is not None else [*entries, *(e for e, _ in semantic)]
    unique = list({e.memory_id: e for e in everyone}.values())
    candidates = [candidate(e, query) for e in entries]
    candidates += [candidate(e, query, similarity) for e, similarity in semantic]
    # The order is what these tests check: scored by the plain fused score
    # (uncalibrated, no minimum); the calibration has tests of its own below.
    plain = UNCALIBRATED if query.semantic else replace(UNCALIBRATED, lexical_weight=1.0)
    return rank(query, query_terms(query.text), stats_of(unique), candidates, calibration=plain)


def ids(hits: list[Ranked]) -> list[str]:
    return [h.candidate.memory_id for h in hits]


def q(text: str, **kwargs: object) -> RecallQuery:
    return RecallQuery(text=text, **kwargs)  # type: ignore[arg-type]


# --- term weights ---------------------------------------------------------------------------


def test_a_rarer_term_weighs_more() -> None:
    stats = TermStats(100, {"tea": 60, "jazz": 3})
    assert stats.weight("jazz") > stats.weight("tea") > 0
    assert stats.weight("never-seen") > stats.weight("jazz")
    assert stats.weight("tea") == pytest.approx(math.log(1 + (100 - 60 + 0.5) / 60.5))


def test_the_rare_term_outranks_several_common_ones() -> None:
    common = [mem(f"tea{i}", "green tea every morning", age=i) for i in range(20)]
    rare = mem("jazz", "jazz records", age=99)
    hits = ranked(q("green tea jazz"), [*common, rare])
    assert ids(hits)[0] == "jazz"


# --- lexical relevance and tie-breaks ------------------------------------------------------------


def test_more_of_the_query_wins_over_scope_pinned_and_recency() -> None:
    entries = [
        mem("a", "likes sushi", age=0, conversation="c1", pinned=True),
        mem("b", "likes sushi and ramen", age=500),
    ]
    query = q("sushi ramen", conversation_id="c1")
    hits = ranked(query, entries)
    assert ids(hits) == ["b", "a"]
    stats = stats_of(entries)
    share = stats.weight("sushi") / (stats.weight("sushi") + stats.weight("ramen"))
    assert [h.score for h in hits] == pytest.approx([1.0, share])
    assert [h.candidate.memory_id for h in hits] == ["b", "a"]


def test_conversation_entry_outranks_identity_entry_with_an_equal_match() -> None:
    identity = mem("a-identity", "The user likes sushi", age=0, pinned=True)
    scoped = mem("z-scoped", "Ordering sushi for the party", age=900, conversation="c1")
    hits = ranked(q("sushi", conversation_id="c1"), [identity, scoped])
    assert ids(hits) == ["z-scoped", "a-identity"]
    assert hits[0].signals == (RecallSignal.LEXICAL, RecallSignal.CONVERSATION_SCOPE)
    assert hits[1].signals == (RecallSignal.LEXICAL, RecallSignal.PINNED)


def test_an_equal_match_is_an_equal_share_not_equal_words() -> None:
    # Different words matched, of equal weight: still an equal match.
    identity = mem("i", "sushi every friday")
    scoped = mem("s", "ramen on mondays", conversation="c1")
    assert ids(ranked(q("sushi ramen", conversation_id="c1"), [identity, scoped])) == ["s", "i"]


def test_pinned_then_recency_then_id_break_remaining_ties() -> None:
    entries = [
        mem("old", "sushi", age=10),
        mem("new", "sushi", age=1),
        mem("pinned-old", "sushi", age=99, pinned=True),
        mem("b-same-time", "sushi", age=5),
        mem("a-same-time", "sushi", age=5),
    ]
    assert ids(ranked(q("sushi"), entries)) == [
        "pinned-old",
        "new",
        "a-same-time",
        "b-same-time",
        "old",
    ]


def test_stemmed_forms_match_and_count_once() -> None:
    entries = [mem("a", "Loves hiking; hikes every weekend"), mem("b", "Liked the hike")]
    hits = ranked(q("hiking likes"), entries)
    assert ids(hits) == ["b", "a"]  # b: hike + like; a: hike only
    assert hits[0].score == 1.0 and 0 < hits[1].score < 1.0


def test_candidates_without_any_matched_term_are_dropped() -> None:
    # A store may hand over false positives; they never become hits.
    assert ranked(q("sushi"), [mem("a", "pizza")]) == []
    assert ranked(q("   "), [mem("a", "sushi")]) == []


# --- visibility -----------------------------------------------------------------------


def test_other_conversations_are_never_returned() -> None:
    entries = [
        mem("other", "sushi", conversation="c2"),
        mem("mine", "sushi", conversation="c1"),
        mem("identity", "sushi"),
    ]
    assert ids(ranked(q("sushi", conversation_id="c1"), entries)) == ["mine", "identity"]
    assert ids(ranked(q("sushi"), entries)) == ["identity"]


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (RecallScope.ANY, ["mine", "identity"]),
        (RecallScope.IDENTITY, ["identity"]),
        (RecallScope.CONVERSATION, ["mine"]),
    ],
)
def test_scope_filter(scope: RecallScope, expected: list[str]) -> None:
    entries = [mem("identity", "sushi"), mem("mine", "sushi", conversation="c1")]
    query = q("sushi", conversation_id="c1", scope=scope)
    assert ids(ranked(query, entries)) == expected
    visible = visible_conversations(query)
    assert sorted(e.memory_id for e in entries if e.conversation in visible) == sorted(expected)


# --- candidate plan ---------------------------------------------------------------------


def test_rare_terms_are_full_and_common_ones_sampled() -> None:
    stats = TermStats(10_000, {"bram": 3, "jazz": 150, "tea": 3_000, "work": 2_000, "usual": 900})
    plan = lexical_plan(["usual", "tea", "bram", "jazz", "nowhere", "work"], stats)
    assert plan == LexicalPlan(full=("bram", "jazz"), sampled=("usual", "work", "tea"))
    assert lexical_plan(["bram", "jazz"], stats) == LexicalPlan(("bram", "jazz"), ())
    assert lexical_plan(["nowhere"], stats) == LexicalPlan((), ())


def test_the_full_terms_stay_within_the_budget_and_sampling_is_bounded() -> None:
    many = {f"t{i:02d}": FULL_BUDGET // 3 for i in range(20)}
    plan = lexical_plan(list(many), TermStats(100_000, many))
    assert sum(many[t] for t in plan.full) <= FULL_BUDGET
    assert plan.full == ("t00", "t01", "t02")
    assert len(plan.sampled) == SAMPLED_TERMS


# --- cut-offs -------------------------------------------------------------------------


def test_min_score_and_max_results() -> None:
    entries = [mem(f"m{i}", "sushi ramen" if i < 3 else "sushi", age=i) for i in range(10)]
    hits = ranked(q("sushi ramen", max_results=4), entries)
    assert ids(hits) == ["m0", "m1", "m2", "m3"]
    strict = ranked(q("sushi ramen", min_score=0.75), entries)
    assert ids(strict) == ["m0", "m1", "m2"]
    assert ranked(q("sushi ramen", min_score=1.01), entries) == []


def test_zero_max_results_means_the_default() -> None:
    entries = [mem(f"m{i:02d}", "sushi", age=i) for i in range(30)]
    assert len(ranked(q("sushi", max_results=0), entries)) == 10


# --- determinism ----------------------------------------------------------------------

WORDS = ["sushi", "ramen", "likes", "liked", "peanuts", "allergy", "vegan", "paris", "hiking"]


@st.composite
def corpora(draw: st.DrawFn) -> list[Entry]:
    count = draw(st.integers(min_value=1, max_value=12))
    entries = []
    for i in range(count):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)))
        entries.append(
            mem(
                f"m{i:02d}",
                text,
                age=draw(st.integers(0, 3)),
                conversation=draw(st.sampled_from(["", "", "c1", "c2"])),
                pinned=draw(st.booleans()),
            )
        )
    return entries


@settings(max_examples=200, deadline=None)
@given(entries=corpora(), query_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_same_hits_whatever_order_the_store_returns(
    entries: list[Entry], query_words: list[str]
) -> None:
    query = q(" ".join(query_words), conversation_id="c1", max_results=100)
    forward = ranked(query, entries)
    backward = ranked(query, list(reversed(entries)), corpus=entries)
    shuffled = list(entries)
    random.Random(7).shuffle(shuffled)
    assert ids(forward) == ids(backward) == ids(ranked(query, shuffled, corpus=entries))
    assert [h.score for h in forward] == sorted((h.score for h in forward), reverse=True)


@settings(max_examples=500, deadline=None)
@given(
    scores=st.lists(
        st.tuples(
            st.sampled_from([0.1, 0.3, 0.123456789012, 0.7]),
            st.sampled_from([0.0, 4e-13, -4e-13, 6e-13, -6e-13, 3e-11, -3e-11]),
        ),
        min_size=2,
        max_size=30,
    ),
    limit=st.integers(min_value=1, max_value=8),
)
def test_the_contenders_for_the_first_n_are_exactly_the_hits_that_round_to_them(
    scores: list[tuple[float, float]], limit: int
) -> None:
    assume(len(scores) > limit)  # rank() asks only then
    # rank() orders only the hits whose rounded score reaches the limit-th
    # best (the order's first key), and rounds only scores within 1e-11 of
    # it: nearly equal scores that round together must all be kept.
    hits = []
    for i, (base, offset) in enumerate(scores):
        hit = Candidate(f"m{i:02d}", "", False, 0)
        hit.score = base + offset
        hits.append(hit)
    rounded = sorted((round(h.score, SCORE_DIGITS) for h in hits), reverse=True)
    cut = rounded[limit - 1]
    expected = [h for h in hits if round(h.score, SCORE_DIGITS) >= cut]
    assert _contenders(hits, limit) == expected


# --- semantic fusion ---------------------------------------------------------------------------


def test_semantic_fusion_changes_the_order_where_the_vectors_say_so() -> None:
    a = mem("a", "The user likes sushi", age=0)
    b = mem("b", "Sushi is the user's comfort food", age=5)
    assert ids(ranked(q("sushi"), [a, b])) == ["a", "b"]  # equal match: recency
    semantic = [(b, 0.9), (a, 0.2)]
    fused = ranked(q("sushi", semantic=True), [a, b], semantic)
    assert ids(fused) == ["b", "a"]
    assert fused[0].signals == (RecallSignal.LEXICAL, RecallSignal.SEMANTIC)
    # Without the semantic flag the vectors are ignored.
    assert ids(ranked(q("sushi"), [a, b], semantic)) == ["a", "b"]


def test_fused_scores_weigh_the_lexical_share_and_the_cosine() -> None:
    a = mem("a", "sushi ramen")
    b = mem("b", "sushi")
    c = mem("c", "nothing lexical")
    corpus = [a, b, c]
    semantic = [(c, 0.8), (b, 0.5)]
    hits = ranked(q("sushi ramen", semantic=True), corpus, semantic)
    share_b = ranked(q("sushi ramen"), corpus)[1].score  # b holds one of the two terms
    assert 0 < share_b < 1
    expected = {
        "a": LEXICAL_WEIGHT * 1.0,
        "b": LEXICAL_WEIGHT * share_b + (1 - LEXICAL_WEIGHT) * 0.5,
        "c": (1 - LEXICAL_WEIGHT) * 0.8,
    }
    assert {h.candidate.memory_id: h.score for h in hits} == pytest.approx(expected)
    assert ids(hits) == sorted(expected, key=lambda k: -expected[k]) == ["a", "b", "c"]
    assert hits[2].signals == (RecallSignal.SEMANTIC,)
    assert all(0 < h.score <= 1 for h in hits)


def test_equal_lexical_shares_are_told_apart_by_their_cosines() -> None:
    """A rank fusion gave every entry with the same share one rank; scores do not."""
    old = mem("old", "Ada said hi", age=0)
    new = mem("new", "Ada moved to Lyon in March", age=10)
    plain = ranked(q("where did Ada move"), [old, new])
    fused = ranked(q("where did Ada move", semantic=True), [old, new], [(new, 0.7), (old, 0.2)])
    assert ids(fused)[0] == "new"
    assert fused[0].score > plain[0].score * LEXICAL_WEIGHT


def test_a_semantic_candidate_holding_query_terms_is_a_lexical_hit_too() -> None:
    a = mem("a", "sushi")
    hits = ranked(q("sushi", semantic=True), [], [(a, 0.5)])
    assert hits[0].signals == (RecallSignal.LEXICAL, RecallSignal.SEMANTIC)
    assert hits[0].score == pytest.approx(LEXICAL_WEIGHT + (1 - LEXICAL_WEIGHT) * 0.5)


def test_semantic_only_query_and_similarity_floor() -> None:
    a, b, c = mem("a", "x"), mem("b", "y"), mem("c", "z")
    hits = ranked(q("", semantic=True), [], [(a, 0.3), (b, 0.7), (c, -0.2)])
    assert ids(hits) == ["b", "a"]  # c points away from the query
    assert [h.score for h in hits] == [0.7, 0.3]  # no query terms: the cosine alone
    tied = ranked(q("", semantic=True), [], [(a, 0.5), (b, 0.5 + 1e-12)])
    assert ids(tied) == ["a", "b"]  # equal within the rounding: id breaks the tie


def test_conversation_scope_wins_equal_fused_scores() -> None:
    identity = mem("a", "sushi", pinned=True)
    scoped = mem("b", "sushi", conversation="c1", age=60)
    semantic = [(identity, 0.5), (scoped, 0.5)]
    hits = ranked(q("sushi", conversation_id="c1", semantic=True), [identity, scoped], semantic)
    assert ids(hits) == ["b", "a"]


def test_duplicate_candidates_count_once() -> None:
    a = mem("a", "sushi")
    hits = ranked(q("sushi", semantic=True), [a, a], [(a, 0.1), (a, 0.4)])
    assert ids(hits) == ["a"]
    assert hits[0].candidate.similarity == 0.4


# --- the vector codec ---------------------------------------------------------------------------------------


def test_vector_codec_round_trips_float32() -> None:
    values = (0.5, -1.25, 3.0e10, 1e-30)
    data = encode_vector(values)
    assert len(data) == 16
    assert decode_vector(data) == pytest.approx(values, rel=1e-7)
    assert decode_vector(encode_vector(decode_vector(data))) == decode_vector(data)
    with pytest.raises(ValueError):
        decode_vector(b"\x00\x00\x00")


# --- relevance: the calibrated score ---------------------------------------------------------


TYPICAL_FIELD = QueryField(0.42, 0.05, 50)
"""A question's field among a few dozen facts about a user (measured with
the default model: a mean cosine of 0.40-0.48, a spread of 0.03-0.08)."""


def _calibrated(
    query: RecallQuery,
    entries: list[Entry],
    semantic: list[tuple[Entry, float]],
    field: QueryField = TYPICAL_FIELD,
) -> list[Ranked]:
    unique = list({e.memory_id: e for e in [*entries, *(e for e, _ in semantic)]}.values())
    candidates = [candidate(e, query) for e in entries]
    candidates += [candidate(e, query, similarity) for e, similarity in semantic]
    chosen = FUSED_DEFAULT_MODEL if query.semantic else LEXICAL
    return rank(
        query,
        query_terms(query.text),
        stats_of(unique),
        candidates,
        calibration=chosen,
        nearest=Nearest(field=field),
    )


def test_relevance_is_a_calibrated_monotonic_function_of_the_fused_score() -> None:
    pairs = [(0.0, 0.3), (0.0, 0.5), (0.2, 0.5), (0.5, 0.6), (1.0, 0.9)]
    scores = [FUSED_DEFAULT_MODEL.relevance(share, cosine, 100) for share, cosine in pairs]
    assert scores == sorted(scores) and all(0 < s < 1 for s in scores)
    # Its midpoint is the documented threshold: what the calibration run fitted.
    fitted = FUSED_DEFAULT_MODEL
    assert fitted.slope is not None
    midpoint = -(fitted.intercept + fitted.size_slope * math.log(100)) / fitted.slope
    assert fitted.relevance(None, midpoint, 100) == pytest.approx(DEFAULT_MIN_RELEVANCE)
    # The same fused score means less in a larger store (the best of more
    # unrelated entries scores higher).
    assert fitted.relevance(0.2, 0.6, 10) > fitted.relevance(0.2, 0.6, 10_000)
    assert LEXICAL.relevance(1.0, None, 100) > DEFAULT_MIN_RELEVANCE
    assert LEXICAL.relevance(0.1, None, 100) < DEFAULT_MIN_RELEVANCE
    assert LEXICAL.default_min == 0  # lexical recall keeps every match unless asked
    # Another model's cosines are on another scale: uncalibrated, no default minimum.
    assert calibration("some-other-model") is UNCALIBRATED and UNCALIBRATED.default_min == 0
    assert calibration(None) is LEXICAL


def test_hits_below_the_minimum_relevance_are_dropped_unless_the_query_says_otherwise() -> None:
    nurse = mem("nurse", "Maria works as a nurse at the city hospital")
    dog = mem("dog", "Maria has a golden retriever named Biscuit")
    semantic = [(nurse, 0.71), (dog, 0.45)]
    hits = _calibrated(q("what does Maria do for a living?", semantic=True), [], semantic)
    assert ids(hits) == ["nurse"]  # the dog is not about the question
    assert hits[0].score >= DEFAULT_MIN_RELEVANCE
    everything = _calibrated(
        q("what does Maria do for a living?", semantic=True, min_score=0.0), [], semantic
    )
    assert ids(everything) == ["nurse", "dog"] and everything[1].score < DEFAULT_MIN_RELEVANCE
    stricter = _calibrated(
        q("what does Maria do for a living?", semantic=True, min_score=0.999), [], semantic
    )
    assert stricter == []


def test_a_query_about_nothing_saved_gets_nothing_when_judging() -> None:
    gate = FUSED_DEFAULT_MODEL.gate
    assert gate is not None
    nurse = mem("nurse", "Maria works as a nurse at the city hospital")
    dog = mem("dog", "Maria has a golden retriever named Biscuit")
    semantic = [(nurse, 0.71), (dog, 0.45)]
    question = "what does Maria do for a living?"
    assert ids(_calibrated(q(question, semantic=True), [], semantic)) == ["nurse"]
    # The same hits, for a query far from everything the user saved (its
    # field: a low mean, a small spread): about nothing saved.
    far = QueryField(0.2, 0.01, 50)
    assert not gate.admits(0.5, far, 50)
    assert _calibrated(q(question, semantic=True), [], semantic, far) == []
    # Asking for every match (min_score 0) skips judgement, the gate too.
    everything = _calibrated(q(question, semantic=True, min_score=0.0), [], semantic, far)
    assert ids(everything) == ["nurse", "dog"]
    # An entry without a vector yet is judged by its words, gate or not.
    terms = query_terms(question)
    fresh = Candidate("fresh", "", False, T0, frozenset(terms), unembedded=True)
    stats = TermStats(50, dict.fromkeys(terms, 1))
    kept = rank(
        q(question, semantic=True),
        terms,
        stats,
        [fresh, candidate(nurse, q(question), 0.71)],
        calibration=FUSED_DEFAULT_MODEL,
        nearest=Nearest(field=far),
    )
    assert ids(kept) == ["fresh"]
    # Nothing searched (no vectors): no field, nothing for the gate to judge.
    assert gate.admits(0.0, QueryField(), 0)
    assert gate.likelihood(0.7, TYPICAL_FIELD, 50) > gate.likelihood(0.7, far, 50)
