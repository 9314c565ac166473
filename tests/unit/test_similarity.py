"""One definition of similarity (``domain.vectors.cosine``): what it answers,
and that the store's numpy forms (the near-duplicate check's unit vectors,
the vector cache's exact cosines) compute the same."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.sameness import unit_vector
from mnemo_server.domain.vectors import cosine
from tests.support import vectors as reference
from tests.support.vectors import user_vectors

_vector = st.lists(st.floats(-1e6, 1e6, width=32), min_size=3, max_size=3).filter(any)


def test_cosine_of_known_vectors() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert cosine([1.0, 0.0], [-3.0, 0.0]) == -1.0
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25, abs=1e-15)


def test_cosine_is_0_for_other_lengths_or_no_direction() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0, 0.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [0.0, 0.0]) == 0.0
    assert cosine([], []) == 0.0


def test_unit_leaves_out_what_has_no_direction() -> None:
    assert unit_vector([0.0, 0.0]) is None
    assert unit_vector([math.inf, 1.0]) is None
    assert unit_vector([3.0, 4.0]) is not None


@settings(max_examples=200, deadline=None)
@given(a=_vector, b=_vector)
def test_the_store_forms_compute_the_same_cosine(a: list[float], b: list[float]) -> None:
    expected = cosine(a, b)
    assert expected == pytest.approx(reference.cosine(a, b), abs=1e-12)
    ua, ub = unit_vector(a), unit_vector(b)
    assert ua is not None and ub is not None
    assert float(ua @ ub) == pytest.approx(expected, abs=1e-12)
    ((_, cached),) = user_vectors([a]).nearest(b, 1, ["c"])
    assert cached == pytest.approx(max(-1.0, min(1.0, expected)), abs=1e-12)
