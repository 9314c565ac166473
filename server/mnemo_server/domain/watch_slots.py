"""How many watches (long-lived server streams) run at once, and whose.

One process runs at most ``total`` watches of a kind; one user at most
``per_user`` of them; and one peer — a client connection, named only when
authentication is off, where the users a request names prove nothing — at
most ``per_peer``, so that one client cannot take every slot by naming many
users. A watch past any of them is refused with ``ResourceExhausted``
(``RATE_LIMITED``, retry after a second) before it starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mnemo_server.domain.errors import ResourceExhausted

RETRY_AFTER_SECONDS = 1.0


def watches_exhausted(limit: int, kind: str, instead: str) -> ResourceExhausted:
    """The answer to a watch beyond the ``limit`` of ``kind`` watches a
    server runs at once (``RATE_LIMITED``; ``instead``: the listing RPC that
    needs no watch)."""
    return ResourceExhausted(
        f"this server already runs {limit} {kind} watches; retry later or use {instead}",
        reason="RATE_LIMITED",
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


@dataclass(frozen=True)
class SlotLimits:
    """The limits of one kind of watch; ``per_user`` ``None``: none."""

    kind: str
    instead: str
    total: int
    per_peer: int
    per_user: int | None = None


class WatchSlots:
    """The running watches of one kind, counted in total, by user and by peer."""

    def __init__(self, limits: SlotLimits) -> None:
        self._limits = limits
        self._total = 0
        self._users: dict[str, int] = {}
        self._peers: dict[str, int] = {}

    @property
    def count(self) -> int:
        return self._total

    def held_by(self, user_id: str) -> int:
        return self._users.get(user_id, 0)

    @contextmanager
    def taken(self, user_id: str | None, peer: str | None) -> Iterator[None]:
        """Hold a slot for the block. Raises ``ResourceExhausted``
        (``RATE_LIMITED``) when a limit is reached (module docstring)."""
        limits = self._limits
        if self._total >= limits.total:
            raise watches_exhausted(limits.total, limits.kind, limits.instead)
        if user_id is not None and limits.per_user is not None:
            held = self._users.get(user_id, 0)
            if held >= limits.per_user:
                raise self._share_exhausted(f"this user already runs {held}", limits.per_user)
        if peer is not None:
            held = self._peers.get(peer, 0)
            if held >= limits.per_peer:
                raise self._share_exhausted(f"this connection already runs {held}", limits.per_peer)
        self._total += 1
        _add(self._users, user_id, 1)
        _add(self._peers, peer, 1)
        try:
            yield
        finally:
            self._total -= 1
            _add(self._users, user_id, -1)
            _add(self._peers, peer, -1)

    def _share_exhausted(self, held: str, limit: int) -> ResourceExhausted:
        limits = self._limits
        return ResourceExhausted(
            f"{held} {limits.kind} watches on this server (at most {limit}); close one, "
            f"retry later or use {limits.instead}",
            reason="RATE_LIMITED",
            retry_after_seconds=RETRY_AFTER_SECONDS,
        )


def _add(counts: dict[str, int], key: str | None, delta: int) -> None:
    if key is None:
        return
    left = counts.get(key, 0) + delta
    if left:
        counts[key] = left
    else:
        del counts[key]
