"""``Tx``: what one write operation works with inside a shared transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection

from mnemo_server.domain.codec import Memo

__all__ = ["PendingFeed", "Replay", "Tx"]

PendingFeed = Callable[[str, Mapping[str, Any]], bool]
"""A deferred change-feed append (``Tx.pending_feed``)."""


class Tx:
    """One write operation's handle on the transaction its batch shares.

    ``conn``: the SQLAlchemy connection (statements built with Core);
    ``raw``: its driver connection (``store.engine.statements``); ``dialect``:
    ``"sqlite"`` or ``"postgresql"``. The operation's own results travel
    here, never through context variables: ``change_cursor`` is the cursor
    of the last change it appended (``store.feed.changes``; 0: none),
    ``moved`` the users whose change feed it moved (woken after the commit) and
    ``to_embed`` the entries (user id, memory pk) it left without a vector
    (``store.memories.vectors.queue``: a store whose server embeds adds them
    to the embedding backlog and hands their users to its worker after the
    commit, ``vectors.EmbedLater``).
    ``memo``: what the write's JSON encodings share (``domain.codec.Memo``:
    a state in the change feed and in the idempotency record is encoded once).
    ``truncate_wal``: the write erased text that must not outlive it on disk;
    on SQLite the write lane empties the WAL after the commit, before it
    answers (``store.engine.wal``).
    ``analyze``: tables the write grew by a bulk of rows, analysed after the
    commit on PostgreSQL (``store.engine.statistics``).
    ``defer_feed``: the write's change-feed append waits, as ``pending_feed``
    (a function that runs it with a data-modifying tail, ``""`` for none,
    and its parameters; it returns whether the tail returned a row), to ride
    one statement with the write's idempotency record
    (``store.transactions.idempotency``; PostgreSQL).
    """

    __slots__ = (
        "analyze",
        "change_cursor",
        "conn",
        "defer_feed",
        "dialect",
        "memo",
        "moved",
        "pending_feed",
        "raw",
        "to_embed",
        "truncate_wal",
    )

    def __init__(self, conn: Connection, raw: Any) -> None:
        self.conn = conn
        self.raw = raw
        self.dialect: str = conn.dialect.name
        self.change_cursor = 0
        self.moved: list[str] = []
        self.memo: Memo = {}
        self.to_embed: list[tuple[str, int]] = []
        self.truncate_wal = False
        self.analyze: set[str] = set()
        self.defer_feed = False
        self.pending_feed: PendingFeed | None = None


class Replay(Exception):
    """Raised by a write to roll itself back and answer with ``value`` and
    ``change_cursor`` instead (the recorded result of an idempotent
    request's first call, ``store.transactions.idempotency``)."""

    def __init__(self, value: Any, change_cursor: int) -> None:
        super().__init__("replayed")
        self.value = value
        self.change_cursor = change_cursor
