"""The ``hashing`` and ``hashing:<dimensions>`` embedder: dependency-free
feature hashing of a text's stems. It is *not* semantic (it only knows which
words are shared); it exists to exercise server-side embedding end to end in
tests and as a safe fallback (``domain.embedding`` documents the spec forms).
Migration 0006 runs it to recompute ``mnemo-hashing-v1-N`` vectors as
``mnemo-hashing-v2-N``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from mnemo_server.domain.embedding import EmbedderConfigError
from mnemo_server.domain.text_search import stems


class HashingEmbedder:
    """Feature hashing of a text's stems into ``dimensions`` signed buckets,
    L2-normalized. Deterministic across processes (BLAKE2b, not ``hash()``).
    Not semantic: see the module doc."""

    def __init__(self, dimensions: int = 256) -> None:
        if not 1 <= dimensions <= 4096:
            raise EmbedderConfigError(f"hashing dimensions must be 1..4096 (got {dimensions})")
        self._dimensions = dimensions

    @property
    def model(self) -> str:
        return f"mnemo-hashing-v2-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _vector(self, text: str) -> tuple[float, ...]:
        values = [0.0] * self._dimensions
        for term in stems(text):
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            number = int.from_bytes(digest, "big")
            values[number % self._dimensions] += 1.0 if number >> 63 else -1.0
        length = math.hypot(*values)
        if length == 0.0:
            # No words: a fixed unit vector, so that the result is still valid.
            values[0] = 1.0
            return tuple(values)
        return tuple(v / length for v in values)

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self._vector(t) for t in texts]
