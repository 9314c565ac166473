"""Exact vector search in pure Python (no numpy).

Cosine similarity is computed through ``math.dist`` and ``math.hypot``, which
run in C without creating a Python float per dimension: for a unit query ``q``
and a vector ``v`` of norm ``n``, ``|q - v|^2 = 1 + n^2 - 2 n cos``, so
``cos = (1 + n^2 - |q - v|^2) / (2 n)``. That is about six times faster than
``sum(map(mul, q, v))`` and agrees with it to ~1e-15. ``VectorIndex`` keeps
the norms, so a query costs one ``math.dist`` per vector (measured on this
project's 2-core machine: about 0.35 s for 100,000 vectors of 384 dimensions,
about 35 ms for 10,000).

Search is exact: every vector is compared. Ties are broken by the item's key
ascending, so results are deterministic.
"""

from __future__ import annotations

import heapq
import math
import sys
from array import array
from collections.abc import Hashable, Iterable, Sequence
from itertools import repeat
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


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


def norm(vector: Sequence[float]) -> float:
    """The Euclidean length of ``vector``."""
    return math.hypot(*vector)


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between ``a`` and ``b``, in [-1, 1].

    0.0 when either is all zeros. Raises ``ValueError`` when the lengths
    differ.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors of different dimensions ({len(a)} and {len(b)})")
    na, nb = norm(a), norm(b)
    if na == 0.0 or nb == 0.0:
        return 0.0
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return max(-1.0, min(1.0, dot / (na * nb)))


class VectorIndex(Generic[K]):
    """The vectors of one user and one model, ready for exact top-k queries.

    Build it once (``O(n * d)``) and query it many times. Items are
    ``(key, vector)``; keys must be unique and orderable (ties are broken by
    key). All vectors must have the same dimension, else ``ValueError``.
    All-zero vectors are kept but never returned (their cosine is undefined).
    """

    def __init__(self, items: Iterable[tuple[K, Sequence[float]]]) -> None:
        keys: list[K] = []
        vectors: list[tuple[float, ...]] = []
        norms: list[float] = []
        dimensions = 0
        for key, vector in items:
            values = tuple(float(v) for v in vector)
            if not dimensions:
                dimensions = len(values)
            elif len(values) != dimensions:
                raise ValueError(
                    f"vector {key!r} has {len(values)} dimensions, the others {dimensions}"
                )
            keys.append(key)
            vectors.append(values)
            norms.append(norm(values))
        if len(set(keys)) != len(keys):
            raise ValueError("vector keys must be unique")
        self._keys = keys
        self._vectors = vectors
        self._norms = norms
        self.dimensions = dimensions

    def __len__(self) -> int:
        return len(self._keys)

    def top_k(
        self, query: Sequence[float], k: int, *, min_similarity: float = -1.0
    ) -> list[tuple[K, float]]:
        """The ``k`` most similar items as ``(key, cosine)``, best first.

        Only items with cosine strictly above ``min_similarity`` are returned
        (the default keeps everything but all-zero vectors). Ties: key
        ascending. Raises ``ValueError`` when the query's dimension differs
        from the index's or the query is all zeros.
        """
        if k <= 0 or not self._keys:
            return []
        if len(query) != self.dimensions:
            raise ValueError(f"query has {len(query)} dimensions, the index {self.dimensions}")
        query_norm = norm(query)
        if query_norm == 0.0:
            raise ValueError("query vector is all zeros")
        unit = tuple(float(v) / query_norm for v in query)
        distances = map(math.dist, repeat(unit), self._vectors)
        scored: list[tuple[float, K]] = []
        for key, n, d in zip(self._keys, self._norms, distances, strict=True):
            if n == 0.0:
                continue
            cos = max(-1.0, min(1.0, (1.0 + n * n - d * d) / (2.0 * n)))
            if cos > min_similarity:
                scored.append((-cos, key))
        best = heapq.nsmallest(k, scored)
        return [(key, -negative) for negative, key in best]


def top_k_cosine(
    query: Sequence[float],
    items: Iterable[tuple[K, Sequence[float]]],
    k: int,
    *,
    min_similarity: float = -1.0,
) -> list[tuple[K, float]]:
    """One-shot exact top-k: ``VectorIndex(items).top_k(query, k, ...)``."""
    return VectorIndex(items).top_k(query, k, min_similarity=min_similarity)
