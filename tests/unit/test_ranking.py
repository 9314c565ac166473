"""The recall ranking policy and exact vector search."""

from __future__ import annotations

import math
import random
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.memory_models import (
    Memory,
    MemoryScope,
    RecallQuery,
    RecallScope,
    RecallSignal,
)
from mnemo_server.domain.ranking import (
    RRF_K,
    SemanticMatch,
    lexical_order_key,
    rank,
    visible,
)
from mnemo_server.domain.text_search import fts5_match_expression, matched_terms, search_document
from mnemo_server.domain.vectors import (
    VectorIndex,
    cosine_similarity,
    decode_vector,
    encode_vector,
    top_k_cosine,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def mem(
    memory_id: str,
    text: str,
    *,
    age: int = 0,
    conversation: str = "",
    pinned: bool = False,
    archived: bool = False,
) -> Memory:
    """An entry updated ``age`` minutes before the newest."""
    at = T0 - timedelta(minutes=age)
    return Memory(
        memory_id=memory_id,
        user_id="u1",
        text=text,
        create_time=at,
        update_time=at,
        scope=MemoryScope.CONVERSATION if conversation else MemoryScope.IDENTITY,
        conversation_id=conversation,
        pinned=pinned,
        archive_time=at if archived else None,
    )


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.memory_id for h in hits]


def q(text: str, **kwargs: object) -> RecallQuery:
    return RecallQuery(text=text, **kwargs)  # type: ignore[arg-type]


# --- lexical relevance and tie-breaks ------------------------------------------------------------


def test_more_matched_terms_wins_over_scope_pinned_and_recency() -> None:
    entries = [
        mem("a", "likes sushi", age=0, conversation="c1", pinned=True),
        mem("b", "likes sushi and ramen", age=500),
    ]
    hits = rank(q("sushi ramen", conversation_id="c1"), entries)
    assert ids(hits) == ["b", "a"]
    assert [h.score for h in hits] == [1.0, 0.5]
    assert [h.rank for h in hits] == [1, 2]


def test_conversation_entry_outranks_identity_entry_with_an_equal_match() -> None:
    identity = mem("a-identity", "The user likes sushi", age=0, pinned=True)
    scoped = mem("z-scoped", "Ordering sushi for the party", age=900, conversation="c1")
    hits = rank(q("sushi", conversation_id="c1"), [identity, scoped])
    assert ids(hits) == ["z-scoped", "a-identity"]
    assert hits[0].signals == (RecallSignal.LEXICAL, RecallSignal.CONVERSATION_SCOPE)
    assert hits[1].signals == (RecallSignal.LEXICAL, RecallSignal.PINNED)


def test_equal_match_means_equal_matched_term_count_not_equal_text() -> None:
    # Different words matched, same count: still an equal match.
    identity = mem("i", "sushi every friday")
    scoped = mem("s", "ramen on mondays", conversation="c1")
    assert ids(rank(q("sushi ramen", conversation_id="c1"), [identity, scoped])) == ["s", "i"]


def test_pinned_then_recency_then_id_break_remaining_ties() -> None:
    entries = [
        mem("old", "sushi", age=10),
        mem("new", "sushi", age=1),
        mem("pinned-old", "sushi", age=99, pinned=True),
        mem("b-same-time", "sushi", age=5),
        mem("a-same-time", "sushi", age=5),
    ]
    assert ids(rank(q("sushi"), entries)) == [
        "pinned-old",
        "new",
        "a-same-time",
        "b-same-time",
        "old",
    ]


def test_stemmed_forms_match_and_count_once() -> None:
    entries = [mem("a", "Loves hiking; hikes every weekend"), mem("b", "Liked the hike")]
    hits = rank(q("hiking likes"), entries)
    assert ids(hits) == ["b", "a"]  # b: hik + lik; a: hik only
    assert [h.score for h in hits] == [1.0, 0.5]


def test_candidates_without_any_matched_term_are_dropped() -> None:
    # A store may hand over false positives; they never become hits.
    assert rank(q("sushi"), [mem("a", "pizza")]) == []
    assert rank(q("   "), [mem("a", "sushi")]) == []


# --- visibility -----------------------------------------------------------------------


def test_archived_and_other_conversations_are_never_returned() -> None:
    entries = [
        mem("archived", "sushi", archived=True),
        mem("other", "sushi", conversation="c2"),
        mem("mine", "sushi", conversation="c1"),
        mem("identity", "sushi"),
    ]
    assert ids(rank(q("sushi", conversation_id="c1"), entries)) == ["mine", "identity"]
    assert ids(rank(q("sushi"), entries)) == ["identity"]


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
    assert ids(rank(query, entries)) == expected
    assert [e.memory_id for e in entries if visible(e, query)] == sorted(expected)


# --- cut-offs -------------------------------------------------------------------------


def test_min_score_and_max_results() -> None:
    entries = [mem(f"m{i}", "sushi ramen" if i < 3 else "sushi", age=i) for i in range(10)]
    hits = rank(q("sushi ramen", max_results=4), entries)
    assert ids(hits) == ["m0", "m1", "m2", "m3"]
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    strict = rank(q("sushi ramen", min_score=0.75), entries)
    assert ids(strict) == ["m0", "m1", "m2"]
    assert rank(q("sushi ramen", min_score=1.01), entries) == []


def test_zero_max_results_means_the_default() -> None:
    entries = [mem(f"m{i:02d}", "sushi", age=i) for i in range(30)]
    assert len(rank(q("sushi", max_results=0), entries)) == 10


# --- determinism and backend independence ------------------------------------------------------------

WORDS = ["sushi", "ramen", "likes", "liked", "peanuts", "allergy", "vegan", "paris", "hiking"]


@st.composite
def corpora(draw: st.DrawFn) -> list[Memory]:
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
                archived=draw(st.booleans()) and draw(st.booleans()),
            )
        )
    return entries


@settings(max_examples=200, deadline=None)
@given(entries=corpora(), query_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_same_hits_whatever_order_the_store_returns(
    entries: list[Memory], query_words: list[str]
) -> None:
    query = q(" ".join(query_words), conversation_id="c1", max_results=100)
    forward = rank(query, entries)
    backward = rank(query, list(reversed(entries)))
    shuffled = list(entries)
    random.Random(7).shuffle(shuffled)
    assert forward == backward == rank(query, shuffled)
    # The hits come out in lexical_order_key order (the order stores cap by).
    keys = [
        lexical_order_key(h.memory, matched_terms(query_terms_of(query), h.memory.text), query)
        for h in forward
    ]
    assert keys == sorted(keys)


def query_terms_of(query: RecallQuery) -> tuple[str, ...]:
    from mnemo_server.domain.text_search import query_terms

    return query_terms(query.text)


def test_fts5_candidates_in_bm25_order_or_any_order_rank_the_same() -> None:
    entries = [
        mem("a", "The user likes sushi and ramen", age=3),
        mem("b", "Sushi sushi sushi", age=2),
        mem("c", "Ramen shop near Paris", age=1, conversation="c1"),
        mem("d", "Peanut allergy", age=0),
    ]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(search_document, tokenize='ascii')")
    db.executemany(
        "INSERT INTO f(rowid, search_document) VALUES (?, ?)",
        [(i, search_document(e.text)) for i, e in enumerate(entries)],
    )
    query = q("sushi ramen", conversation_id="c1")
    expression = fts5_match_expression(query.text)
    by_bm25 = [
        entries[r[0]]
        for r in db.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f)", (expression,))
    ]
    by_rowid = [
        entries[r[0]]
        for r in db.execute(
            "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rowid DESC", (expression,)
        )
    ]
    assert {e.memory_id for e in by_bm25} == {"a", "b", "c"}
    assert ids(rank(query, by_bm25)) == ids(rank(query, by_rowid)) == ["a", "c", "b"]


# --- semantic fusion ---------------------------------------------------------------------------


def test_semantic_fusion_changes_the_order_where_the_vectors_say_so() -> None:
    a = mem("a", "The user likes sushi", age=0)
    b = mem("b", "Sushi is the user's comfort food", age=5)
    lexical_only = rank(q("sushi"), [a, b])
    assert ids(lexical_only) == ["a", "b"]  # equal match: recency
    semantic = [SemanticMatch(b, 0.9), SemanticMatch(a, 0.2)]
    fused = rank(q("sushi", semantic=True), [a, b], semantic)
    assert ids(fused) == ["b", "a"]
    assert fused[0].signals == (RecallSignal.LEXICAL, RecallSignal.SEMANTIC)
    # Without the semantic flag the vectors are ignored.
    assert ids(rank(q("sushi"), [a, b], semantic)) == ["a", "b"]


def test_fused_scores_are_normalized_reciprocal_rank_fusion() -> None:
    a = mem("a", "sushi ramen")
    b = mem("b", "sushi")
    c = mem("c", "nothing lexical")
    semantic = [SemanticMatch(c, 0.8), SemanticMatch(b, 0.5)]
    hits = rank(q("sushi ramen", semantic=True), [a, b, c], semantic)
    best = 2 / (RRF_K + 1)
    expected = {
        "a": (1 / (RRF_K + 1)) / best,
        "b": (1 / (RRF_K + 2) + 1 / (RRF_K + 2)) / best,
        "c": (1 / (RRF_K + 1)) / best,
    }
    assert {h.memory.memory_id: h.score for h in hits} == pytest.approx(expected)
    assert ids(hits) == ["b", "a", "c"]  # a and c tie: recency is equal, then id
    assert hits[2].signals == (RecallSignal.SEMANTIC,)
    assert all(0 < h.score <= 1 for h in hits)


def test_semantic_only_query_and_similarity_floor() -> None:
    a, b, c = mem("a", "x"), mem("b", "y"), mem("c", "z")
    semantic = [SemanticMatch(a, 0.3), SemanticMatch(b, 0.7), SemanticMatch(c, -0.2)]
    hits = rank(q("", semantic=True), [], semantic)
    assert ids(hits) == ["b", "a"]  # c points away from the query
    assert hits[0].score == 1.0
    tied = rank(q("", semantic=True), [], [SemanticMatch(a, 0.5), SemanticMatch(b, 0.5 + 1e-12)])
    assert ids(tied) == ["a", "b"]  # equal within the rounding: id breaks the tie


def test_conversation_scope_wins_equal_fused_scores() -> None:
    identity = mem("a", "sushi", pinned=True)
    scoped = mem("b", "sushi", conversation="c1", age=60)
    semantic = [SemanticMatch(identity, 0.5), SemanticMatch(scoped, 0.5)]
    hits = rank(q("sushi", conversation_id="c1", semantic=True), [identity, scoped], semantic)
    assert ids(hits) == ["b", "a"]


def test_duplicate_candidates_count_once() -> None:
    a = mem("a", "sushi")
    hits = rank(q("sushi", semantic=True), [a, a], [SemanticMatch(a, 0.1), SemanticMatch(a, 0.4)])
    assert ids(hits) == ["a"]


# --- vectors ---------------------------------------------------------------------------------------


def naive_cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def test_cosine_similarity_known_values() -> None:
    assert cosine_similarity([1, 0], [0, 1]) == 0.0
    assert cosine_similarity([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert cosine_similarity([1, 0], [-1, 0]) == -1.0
    assert cosine_similarity([0, 0], [1, 1]) == 0.0
    with pytest.raises(ValueError, match="dimensions"):
        cosine_similarity([1], [1, 2])


vector = st.lists(st.floats(-10, 10, allow_nan=False), min_size=4, max_size=4)


@settings(max_examples=100, deadline=None)
@given(
    query=vector.filter(lambda v: any(abs(x) > 1e-3 for x in v)),
    vectors=st.lists(vector.filter(lambda v: any(abs(x) > 1e-3 for x in v)), max_size=30),
    k=st.integers(1, 10),
)
def test_top_k_is_exact(query: list[float], vectors: list[list[float]], k: int) -> None:
    items = [(f"v{i:03d}", v) for i, v in enumerate(vectors)]
    expected = sorted(
        ((key, naive_cosine(query, v)) for key, v in items), key=lambda x: (-x[1], x[0])
    )
    for found in (VectorIndex(items).top_k(query, k), top_k_cosine(query, items, k)):
        assert len(found) == min(k, len(items))
        assert [c for _, c in found] == pytest.approx([c for _, c in expected[:k]], abs=1e-9)
        # Any key returned is at least as similar as the k-th best.
        if found:
            assert min(c for _, c in found) >= expected[len(found) - 1][1] - 1e-9


def test_ties_resolve_by_key_and_zero_vectors_are_skipped() -> None:
    items = [("c", [1.0, 0.0]), ("a", [2.0, 0.0]), ("b", [3.0, 0.0]), ("z", [0.0, 0.0])]
    assert VectorIndex(items).top_k([1.0, 0.0], 2) == [("a", 1.0), ("b", 1.0)]
    assert top_k_cosine([1.0, 0.0], items, 2) == [("a", 1.0), ("b", 1.0)]
    assert len(VectorIndex(items)) == 3


def test_min_similarity_and_errors() -> None:
    items = [("a", [1.0, 0.0]), ("b", [0.0, 1.0]), ("c", [-1.0, 0.0])]
    index = VectorIndex(items)
    assert [key for key, _ in index.top_k([1.0, 0.1], 3, min_similarity=0.0)] == ["a", "b"]
    assert index.top_k([1.0, 0.0], 0) == []
    with pytest.raises(ValueError, match="dimensions"):
        index.top_k([1.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="zeros"):
        index.top_k([0.0, 0.0], 1)
    with pytest.raises(ValueError, match="dimensions"):
        VectorIndex([("a", [1.0]), ("b", [1.0, 2.0])])
    with pytest.raises(ValueError, match="unique"):
        VectorIndex([("a", [1.0]), ("a", [2.0])])


@pytest.mark.slow
def test_exact_at_100000_vectors() -> None:
    rng = random.Random(42)
    vectors = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(100_000)]
    items = [(f"m{i:06d}", v) for i, v in enumerate(vectors)]
    query = [rng.uniform(-1, 1) for _ in range(8)]
    # Plant an exact duplicate direction and a near one.
    items[77_777] = ("m077777", [x * 3 for x in query])
    items[12_345] = ("m012345", [x + 1e-3 for x in query])
    found = VectorIndex(items).top_k(query, 10)
    assert [key for key, _ in found[:2]] == ["m077777", "m012345"]
    expected = sorted(((k, naive_cosine(query, v)) for k, v in items), key=lambda x: (-x[1], x[0]))[
        :10
    ]
    assert [k for k, _ in found] == [k for k, _ in expected]
    assert [k for k, _ in top_k_cosine(query, items, 10)] == [k for k, _ in expected]


def test_vector_codec_round_trips_float32() -> None:
    values = (0.5, -1.25, 3.0e10, 1e-30)
    data = encode_vector(values)
    assert len(data) == 16
    assert decode_vector(data) == pytest.approx(values, rel=1e-7)
    assert decode_vector(encode_vector(decode_vector(data))) == decode_vector(data)
    with pytest.raises(ValueError):
        decode_vector(b"\x00\x00\x00")
