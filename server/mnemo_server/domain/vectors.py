"""How vectors are kept: little-endian float32 bytes, the same in SQLite and
PostgreSQL. The search over them is ``store.memories.vector_cache``."""

from __future__ import annotations

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
