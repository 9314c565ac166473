"""How vectors are kept: little-endian float32 bytes, the same in SQLite and
PostgreSQL; what a vector must be to be kept or compared
(``vector_problem``); and how two vectors compare (``cosine``, the one
definition of similarity). The search over them is
``store.memories.vector_cache``."""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence


def encode_vector(values: Sequence[float]) -> bytes:
    """``values`` as little-endian float32 bytes: how both stores keep vectors,
    so that SQLite and PostgreSQL compare exactly the same numbers. Raises
    ``OverflowError`` for values out of float32 range."""
    packed = array("f", values)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def decode_vector(data: bytes) -> tuple[float, ...]:
    """The inverse of ``encode_vector``. Raises ``ValueError`` when
    ``len(data)`` is not a multiple of 4."""
    packed = array("f")
    packed.frombytes(data)
    if sys.byteorder == "big":
        packed.byteswap()
    return tuple(packed)


FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: a value beyond it is kept as infinity."""


def vector_problem(values: Sequence[float], dimensions: int) -> str | None:
    """Why ``values`` cannot be a vector of a model of ``dimensions`` values,
    or ``None`` when it can: the one check every vector passes before it is
    stored or compared, whoever computed it (a client, the server's
    embedder, its provider). A vector has exactly ``dimensions`` values, each
    finite in float32 (how vectors are kept: ``encode_vector``), not all 0
    (a zero vector has no direction, so no cosine)."""
    if len(values) != dimensions:
        return f"has {len(values)} values, not the model's {dimensions}"
    return values_problem(values)


def values_problem(values: Sequence[float]) -> str | None:
    """``vector_problem`` but for the length: for a vector whose model's
    dimension is not known yet (a client's, checked against the model's
    stored vectors by the store)."""
    if not all(math.isfinite(v) and -FLOAT32_MAX <= v <= FLOAT32_MAX for v in values):
        return "values must be finite (in float32)"
    if values and not any(values):
        return "must not be all zeros"
    return None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The similarity of two vectors: the cosine of their angle,
    ``a . b / (|a| |b|)``, in float64 (an exactly rounded sum, ``math.fsum``,
    over lengths from ``math.hypot``). 0.0 when their lengths differ or
    either has no direction (length 0).

    The one definition of similarity in Mnemo. Documents are ranked with it
    as it is (``domain.documents``); the store computes the same in numpy
    where it compares many stored vectors at once: the near-duplicate check
    as dot products of unit vectors (``domain.sameness.unit_vector``,
    which leaves out a vector of no direction instead of scoring it 0), and
    semantic recall as one matrix product over a user's whole matrix of a
    model (``store.memories.vector_cache``, whose exact cosines are these,
    clipped to [-1, 1]), because a loop of this function over thousands of
    vectors would cost a recall tens of milliseconds.
    """
    if len(a) != len(b):
        return 0.0
    na, nb = math.hypot(*a), math.hypot(*b)
    if na == 0 or nb == 0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)
