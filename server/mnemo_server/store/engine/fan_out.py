"""The maintenance pass's reads of every user's rows, and the writes that follow.

A pass that finds expired or old rows of every user reads them once, without
locking (a query of every shard, on a database sharded by user, may not lock
rows), then locks and deletes them user by user: statements that name one
user, which such a database routes to that user's shard, and which re-check
what was found, since a row may have been refreshed or taken by another
server's pass in between (``SKIP LOCKED``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["per_user"]

K = TypeVar("K", int, str)


def per_user(found: Iterable[tuple[str, K]]) -> dict[str, list[K]]:
    """``(user_id, key)`` rows grouped by user: users in order, keys sorted."""
    grouped: dict[str, list[K]] = {}
    for user_id, key in found:
        grouped.setdefault(user_id, []).append(key)
    return {user_id: sorted(grouped[user_id]) for user_id in sorted(grouped)}
