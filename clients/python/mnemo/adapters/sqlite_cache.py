"""The hybrid adapter's local cache: one SQLite file (``sqlite3``, standard library).

It keeps, per user: the entries as last known (confirmed by the server or
written optimistically), the writes still to send (``pending``, in order, each
with the request id it will be sent with), and the change-feed cursor the
entries are up to date with. Every method is one short transaction under a
lock, so the feed follower (a thread, or the event loop) and the app can use
one cache at once. ``sqlite3.Error`` is raised as is; the hybrid adapter
turns it into "nothing cached" on its read paths.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from mnemo.adapters.gecx import MemoryEntry

__all__ = ["PendingWrite", "SqliteMemoryCache"]

Operation = Literal["create", "update", "delete"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    user TEXT NOT NULL, id TEXT NOT NULL, entry TEXT NOT NULL,
    PRIMARY KEY (user, id)
);
CREATE TABLE IF NOT EXISTS pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL, id TEXT NOT NULL, operation TEXT NOT NULL,
    payload TEXT NOT NULL, request_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cursors (user TEXT PRIMARY KEY, cursor INTEGER NOT NULL);
"""
_TIMES = ("created_at", "updated_at", "archived_at", "event_time", "valid_until")


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A write kept while the server was unreachable, sent again by ``sync``."""

    seq: int
    id: str
    operation: Operation
    payload: dict[str, Any]
    request_id: str


def _dump(entry: MemoryEntry) -> str:
    values = asdict(entry)
    for name in _TIMES:
        value = values[name]
        values[name] = value.isoformat() if value is not None else None
    return json.dumps(values, ensure_ascii=False)


def _load(text: str) -> MemoryEntry:
    values = json.loads(text)
    for name in _TIMES:
        value = values.get(name)  # a row cached before the field existed has none
        values[name] = datetime.datetime.fromisoformat(value) if value is not None else None
    return MemoryEntry(**values)


class SqliteMemoryCache:
    """A local cache of memory entries in the SQLite file ``path`` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction (re-entrant within a thread): all of it or nothing."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # ------------------------------------------------------------ entries

    def get(self, user: str, memory_id: str) -> MemoryEntry | None:
        with self.transaction() as db:
            row = db.execute(
                "SELECT entry FROM entries WHERE user = ? AND id = ?", (user, memory_id)
            ).fetchone()
        return _load(row[0]) if row else None

    def entries(self, user: str) -> list[MemoryEntry]:
        """Every cached entry of ``user``, archived ones included, newest first."""
        with self.transaction() as db:
            rows = db.execute("SELECT entry FROM entries WHERE user = ?", (user,)).fetchall()
        epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
        found = [_load(row[0]) for row in rows]
        return sorted(found, key=lambda e: (e.created_at or epoch, e.id), reverse=True)

    def put(self, user: str, entry: MemoryEntry) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO entries (user, id, entry) VALUES (?, ?, ?)",
                (user, entry.id, _dump(entry)),
            )

    def remove(self, user: str, memory_id: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM entries WHERE user = ? AND id = ?", (user, memory_id))

    def replace_all(self, user: str, entries: list[MemoryEntry]) -> None:
        """The server's full list replaces the cache, except entries with pending writes."""
        with self.transaction() as db:
            db.execute(
                "DELETE FROM entries WHERE user = ? AND id NOT IN"
                " (SELECT id FROM pending WHERE user = ?)",
                (user, user),
            )
            pending = self.pending_ids(user)
            for entry in entries:
                if entry.id not in pending:
                    self.put(user, entry)

    def clear(self, user: str) -> None:
        """Forget everything about ``user``: entries, pending writes, the cursor."""
        with self.transaction() as db:
            for table in ("entries", "pending", "cursors"):
                db.execute(f"DELETE FROM {table} WHERE user = ?", (user,))

    # ------------------------------------------------------------ pending

    def add_pending(
        self,
        user: str,
        memory_id: str,
        operation: Operation,
        payload: dict[str, Any],
        request_id: str,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO pending (user, id, operation, payload, request_id)"
                " VALUES (?, ?, ?, ?, ?)",
                (user, memory_id, operation, json.dumps(payload), request_id),
            )

    def pending(self, user: str) -> list[PendingWrite]:
        """The writes still to send, oldest first."""
        with self.transaction() as db:
            rows = db.execute(
                "SELECT seq, id, operation, payload, request_id FROM pending"
                " WHERE user = ? ORDER BY seq",
                (user,),
            ).fetchall()
        return [PendingWrite(s, i, o, json.loads(p), r) for s, i, o, p, r in rows]

    def rename_pending(self, user: str, old_id: str, new_id: str) -> None:
        """Point the pending writes of entry ``old_id`` at ``new_id`` (the server
        answered a queued save with another entry that already held the fact)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE pending SET id = ? WHERE user = ? AND id = ?", (new_id, user, old_id)
            )

    def pending_ids(self, user: str) -> set[str]:
        with self.transaction() as db:
            rows = db.execute("SELECT DISTINCT id FROM pending WHERE user = ?", (user,)).fetchall()
        return {row[0] for row in rows}

    def drop_pending(self, user: str, *, seq: int | None = None, memory_id: str = "") -> None:
        """Forget one pending write (``seq``), or every one of an entry (``memory_id``)."""
        with self.transaction() as db:
            if seq is not None:
                db.execute("DELETE FROM pending WHERE user = ? AND seq = ?", (user, seq))
            else:
                db.execute("DELETE FROM pending WHERE user = ? AND id = ?", (user, memory_id))

    # ------------------------------------------------------------- cursor

    def cursor(self, user: str) -> int | None:
        """The change-feed cursor the entries are up to date with; ``None``: never synced."""
        with self.transaction() as db:
            row = db.execute("SELECT cursor FROM cursors WHERE user = ?", (user,)).fetchone()
        return int(row[0]) if row else None

    def set_cursor(self, user: str, cursor: int) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO cursors (user, cursor) VALUES (?, ?)", (user, cursor)
            )
