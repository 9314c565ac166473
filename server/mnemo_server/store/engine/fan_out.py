"""The maintenance pass's reads of every user's rows, and the writes that follow.

A pass that finds expired or old rows of every user reads them once, without
locking (a query of every shard, on a database sharded by user, may not lock
rows), then locks and deletes them user by user: statements that name one
user, which such a database routes to that user's shard, and which re-check
what was found, since a row may have been refreshed or taken by another
server's pass in between (``SKIP LOCKED``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import Connection, Select

__all__ = ["per_user", "purge_per_user"]

K = TypeVar("K", int, str)


def per_user(found: Iterable[tuple[str, K]]) -> dict[str, list[K]]:
    """``(user_id, key)`` rows grouped by user: users in order, keys sorted."""
    grouped: dict[str, list[K]] = {}
    for user_id, key in found:
        grouped.setdefault(user_id, []).append(key)
    return {user_id: sorted(grouped[user_id]) for user_id in sorted(grouped)}


def purge_per_user(
    conn: Connection, oldest: Select[Any], purge: Callable[[str, list[Any]], int]
) -> int:
    """The pass over one table: read ``oldest`` (the ``(user_id, key)`` of a
    batch of rows to remove, of every user, unlocked), then ``purge(user_id,
    keys)`` each user's keys with statements that name that user; the sum of
    what ``purge`` returns."""
    found = conn.execute(oldest).all()
    grouped = per_user((row[0], row[1]) for row in found)
    return sum(purge(user_id, keys) for user_id, keys in grouped.items())
