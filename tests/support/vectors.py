"""The tests' reference for vector similarity: a plain, slow, obviously
correct cosine to check the server's search against."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.memories.vector_cache import UserVectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of ``a`` and ``b`` in float64 (``math.fsum``); 0.0 when
    either is all zeros."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(math.fsum(x * x for x in a))
    nb = math.sqrt(math.fsum(y * y for y in b))
    return 0.0 if na == 0.0 or nb == 0.0 else dot / (na * nb)


def user_vectors(vectors: Sequence[Sequence[float]], conversation: str = "c") -> UserVectors:
    """``vectors`` as the vector cache holds them, keyed ``v000``, ``v001``...
    in ``conversation``."""
    return UserVectors.build(
        1,
        len(vectors[0]) if vectors else 1,
        [(f"v{i:03d}", conversation, encode_vector(v)) for i, v in enumerate(vectors)],
    )
