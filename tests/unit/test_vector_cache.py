"""Exact vector search as recall runs it (``store.memories.vector_cache``):
the top ``k`` by cosine, exact, ties by id, whatever the magnitude of the
stored values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.errors import MnemoError
from mnemo_server.domain.memory_models import Embedding
from mnemo_server.domain.ranking import NOTHING_NEAR
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store.memories.vector_cache import UserVectors
from tests.support.vectors import cosine, user_vectors

# A direction times a power of two from subnormal to near the float32 maximum
# (a valid embedding may hold any finite float32 that is not all zeros).
_direction = st.lists(st.floats(-1, 1, width=32), min_size=4, max_size=4)
_scaled = st.builds(
    lambda values, exponent: decode_vector(
        encode_vector([math.ldexp(v, exponent) for v in values])
    ),
    _direction,
    st.sampled_from([-140, -130, -60, 0, 0, 0, 3, 60, 127]),
)
vector = _scaled.filter(any)


@settings(max_examples=200, deadline=None)
@given(query=vector, vectors=st.lists(vector, min_size=1, max_size=30), k=st.integers(1, 10))
def test_nearest_is_the_exact_top_k(
    query: tuple[float, ...], vectors: list[tuple[float, ...]], k: int
) -> None:
    found = user_vectors(vectors).nearest(query, k, ["c"])
    expected = sorted(
        ((f"v{i:03d}", cosine(query, v)) for i, v in enumerate(vectors)),
        key=lambda item: (-item[1], item[0]),
    )
    assert len(found) == min(k, len(vectors))
    assert [c for _, c in found] == pytest.approx([c for _, c in expected[:k]], abs=1e-9)
    assert found == sorted(found, key=lambda item: (-item[1], item[0]))
    # Each entry returned is at least as similar as the k-th best.
    assert min(c for _, c in found) >= expected[len(found) - 1][1] - 1e-9


def test_opposite_tiny_and_huge_vectors_are_found() -> None:
    # Each of these was missed or misranked while rows were scored unscaled.
    assert user_vectors([[0.0, 0.0, 0.0, 1.0]]).nearest([0.0, 0.0, 0.0, -1.0], 1, ["c"]) == [
        ("v000", -1.0)
    ]
    tiny = user_vectors([[1e-40, 1e-40, 0.0], [1.0, 0.0, 0.0], [-1e-40, 0.0, 0.0]])
    assert [key for key, _ in tiny.nearest([1.0, 0.05, 0.0], 3, ["c"])] == ["v001", "v000", "v002"]
    huge = user_vectors([[3e38, 3e38, 3e38], [1.0, 0.0, 0.0]])
    assert [key for key, _ in huge.nearest([1.0, 0.0, 0.1], 1, ["c"])] == ["v001"]
    assert user_vectors([[1e-45, 0.0]]).nearest([3e38, 0.0], 1, ["c"]) == [("v000", 1.0)]


def test_ties_resolve_by_id() -> None:
    index = user_vectors([[1.0, 0.0], [2.0, 0.0], [0.5, 0.5], [3.0, 0.0]])
    assert index.nearest([1.0, 0.0], 4, ["c"]) == [
        ("v000", 1.0),
        ("v001", 1.0),
        ("v003", 1.0),
        ("v002", pytest.approx(math.sqrt(0.5))),
    ]
    assert index.nearest([1.0, 0.0], 0, ["c"]) == []


def test_rows_that_are_not_valid_vectors_are_skipped_and_named() -> None:
    rows = [
        ("ok", "c", encode_vector([1.0, 0.0])),
        ("short", "c", encode_vector([1.0])),
        ("zeros", "c", encode_vector([0.0, 0.0])),
        ("nan", "c", encode_vector([math.nan, 1.0])),
        ("infinite", "c", encode_vector([1e39, 1.0])),  # kept as float32: infinity
        ("also-ok", "c", encode_vector([0.0, 2.0])),
    ]
    index = UserVectors.build(1, 2, rows)
    assert index.memory_ids == ("ok", "also-ok")
    assert sorted(index.skipped) == ["infinite", "nan", "short", "zeros"]
    assert index.nearest([1.0, 1.0], 5, ["c"]) == [
        ("also-ok", pytest.approx(math.sqrt(0.5))),
        ("ok", pytest.approx(math.sqrt(0.5))),
    ]
    none_left = UserVectors.build(1, 2, rows[1:2])
    assert none_left.memory_ids == () and none_left.nearest([1.0, 0.0], 1, ["c"]) == []


def test_only_the_conversations_asked_for() -> None:
    index = UserVectors.build(
        1,
        2,
        [
            ("a", "c1", encode_vector([1.0, 0.0])),
            ("b", "c2", encode_vector([0.9, 0.1])),
            ("c", "c1", encode_vector([0.0, 1.0])),
        ],
    )
    assert [key for key, _ in index.nearest([1.0, 0.0], 1, ["c2"])] == ["b"]
    assert [key for key, _ in index.nearest([1.0, 0.0], 5, ["c1", "c3"])] == ["a", "c"]
    assert index.nearest([1.0, 0.0], 5, ["c3"]) == []


def test_errors() -> None:
    index = user_vectors([[1.0, 0.0]])
    with pytest.raises(ValueError, match="dimensions"):
        index.nearest([1.0, 0.0, 0.0], 1, ["c"])
    with pytest.raises(ValueError, match="zeros"):
        index.nearest([0.0, 0.0], 1, ["c"])


def _embedding(values: list[float]) -> Embedding:
    return Embedding("m", tuple(values))


def test_search_gives_the_field_and_any_searched_entry_s_cosine() -> None:
    index = UserVectors.build(
        1,
        2,
        [
            ("a", "c1", encode_vector([1.0, 0.0])),
            ("b", "c2", encode_vector([0.9, 0.1])),
            ("c", "c1", encode_vector([0.0, 1.0])),
            ("d", "c1", encode_vector([0.5, 0.5])),
        ],
    )
    found = index.search(_embedding([1.0, 0.0]), 1, ["c1"], strict=True)
    assert dict(found.similarities) == {"a": 1.0}
    # Any searched entry's exact cosine; none for another conversation's.
    cosines = found.cosines(["d", "b", "unknown", "a"])
    assert cosines == {"d": pytest.approx(math.sqrt(0.5)), "a": 1.0}
    # The query's field: its cosines' mean and spread over what it searched.
    searched = [1.0, 0.0, math.sqrt(0.5)]
    mean = sum(searched) / 3
    spread = math.sqrt(sum((c - mean) ** 2 for c in searched) / 3)
    assert found.field.mean == pytest.approx(mean, abs=1e-6)
    assert found.field.spread == pytest.approx(spread, abs=1e-6)
    assert found.field.searched == 3
    both = index.search(_embedding([1.0, 0.0]), 5, ["c1", "c2"], strict=True)
    assert both.cosines(["b"]) == {"b": pytest.approx(0.9 / math.sqrt(0.82))}
    assert both.field.searched == 4


def test_search_finds_nothing_for_a_query_it_cannot_compare() -> None:
    index = user_vectors([[1.0, 0.0]])
    assert index.search(_embedding([0.0, 0.0]), 1, ["c"], strict=True) is NOTHING_NEAR
    assert index.search(_embedding([1.0, 0.0, 0.0]), 1, ["c"], strict=False) is NOTHING_NEAR
    assert index.search(_embedding([1.0, 0.0]), 1, ["elsewhere"], strict=True) is NOTHING_NEAR
    with pytest.raises(MnemoError):
        index.search(_embedding([1.0, 0.0, 0.0]), 1, ["c"], strict=True)
