"""Telling a process's change watches that a user's feed moved, without polling hot.

The write side is ``notify_change(tx, user_id)``, called by the
change append (``store.feed.changes``) inside the write transaction:

- PostgreSQL: nothing to send: the trigger ``change_cursors_notify``
  (migration 0005) runs ``pg_notify('mnemo_changes', '<user_id> <cursor>')``
  when the append moves the user's cursor counter, which PostgreSQL delivers
  to every listener when (and only if) the transaction commits. A trigger
  rather than a statement saves the write a round trip.
- SQLite: the notice is kept on the write's ``Tx`` and, once its batch has
  committed, the write lane (``store.engine.lanes``) calls ``committed``, which
  wakes the watches of every server of this process on the same file. A
  write that rolled back announces nothing.

The read side is one ``ChangeNotifier`` per server (``start()``/``stop()``),
waking a ``domain.change_watch.Wakeups``:

- PostgreSQL (``PgChangeNotifier``): one ``LISTEN mnemo_changes`` connection
  (psycopg async) per process. If it drops (a PostgreSQL restart, its
  backend terminated, any error at all), it reconnects with backoff (0.1 s
  doubling to 5 s) for as long as the server runs, and then wakes every
  watch, since notices sent meanwhile were lost. TCP keepalives and a
  connect timeout (unless the URL sets its own) make a silently dead
  connection fail instead of hanging.
- SQLite (``SqliteChangeNotifier``): the in-process wake above, plus one
  poll per process every ``poll_seconds`` of ``PRAGMA data_version`` (a
  counter SQLite bumps when another connection commits); when it moved, one
  ``latest_cursors`` query for the watched users wakes those whose cursor
  grew. A write by another process reaches a watch here within about
  ``poll_seconds`` plus one read.

Either way a watch also re-reads by itself every heartbeat interval, so a
lost notice delays a change by at most that long and never loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Collection, Mapping
from typing import Protocol

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from sqlalchemy.engine import URL, make_url

from mnemo_server.domain.change_watch import Wakeups
from mnemo_server.runtime.bounded_waits import wait_task
from mnemo_server.store.transactions.tx import Tx

log = logging.getLogger(__name__)

CHANNEL = "mnemo_changes"
_RECONNECT_MIN_S = 0.1
_RECONNECT_MAX_S = 5.0
# libpq settings of the LISTEN connection, where the URL does not set them:
# a connection that idles forever must notice a peer that vanished.
_LISTEN_CONNINFO = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}


def notify_change(tx: Tx, user_id: str) -> None:
    """Announce, from inside a write, that ``user_id``'s feed moved; watches
    hear of it once the write's transaction commits (a watch reads the
    cursor from the store, so the notice need not carry it)."""
    if tx.dialect == "postgresql":
        return  # the change_cursors trigger sends it (migration 0005)
    tx.moved.append(user_id)


def file_key(database: str) -> str:
    """How ``committed`` names the SQLite file ``database`` (its real path)."""
    return _file_key(database)


def committed(key: str, user_ids: Collection[str]) -> None:
    """The feeds of ``user_ids`` moved in a transaction that just committed
    to the SQLite file of ``key`` (``file_key``): wake this process's
    watches of them."""
    if user_ids:
        _LOCAL.wake(key, user_ids)


def parse_payload(payload: str) -> tuple[str, int] | None:
    """``"<user_id> <cursor>"`` -> ``(user_id, cursor)``; ``None`` if malformed."""
    user_id, _, cursor = payload.rpartition(" ")
    if not user_id or not cursor.isdigit():
        return None
    return user_id, int(cursor)


def _file_key(database: str) -> str:
    return os.path.realpath(database)


# ------------------------------------------------- SQLite in-process wake-ups


class _LocalWakeups:
    """The ``Wakeups`` of this process's SQLite servers, by database file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: dict[str, set[tuple[asyncio.AbstractEventLoop, Wakeups]]] = {}

    def add(self, key: str, loop: asyncio.AbstractEventLoop, wakeups: Wakeups) -> None:
        with self._lock:
            self._targets.setdefault(key, set()).add((loop, wakeups))

    def remove(self, key: str, loop: asyncio.AbstractEventLoop, wakeups: Wakeups) -> None:
        with self._lock:
            targets = self._targets.get(key, set())
            targets.discard((loop, wakeups))
            if not targets:
                self._targets.pop(key, None)

    def wake(self, key: str, user_ids: Collection[str]) -> None:
        with self._lock:
            targets = list(self._targets.get(key, ()))
        users = sorted(set(user_ids))
        for loop, wakeups in targets:  # one hop into each loop, for every user
            with contextlib.suppress(RuntimeError):  # that server's loop is closed
                loop.call_soon_threadsafe(_wake_each, wakeups, users)


def _wake_each(wakeups: Wakeups, user_ids: list[str]) -> None:
    for user_id in user_ids:
        wakeups.wake(user_id)


_LOCAL = _LocalWakeups()


# ------------------------------------------------------------------ notifiers


class ChangeNotifier(Protocol):
    """What a server starts and stops; ``wakeups`` is what watches wait on."""

    wakeups: Wakeups

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class CursorReader(Protocol):
    async def latest_cursors(self, user_ids: Collection[str]) -> Mapping[str, int]: ...


def open_notifier(
    database_url: str, wakeups: Wakeups, cursors: CursorReader, *, poll_seconds: float
) -> ChangeNotifier:
    """The notifier for the database at ``database_url``."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        return PgChangeNotifier(url, wakeups)
    return SqliteChangeNotifier(url.database or "", wakeups, cursors, poll_seconds)


def libpq_conninfo(url: URL) -> str:
    """A SQLAlchemy PostgreSQL URL as a libpq connection URI (psycopg's)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class PgChangeNotifier:
    """``LISTEN mnemo_changes`` on one connection of this process."""

    def __init__(self, url: URL, wakeups: Wakeups) -> None:
        self.wakeups = wakeups
        conninfo = libpq_conninfo(url)
        given = conninfo_to_dict(conninfo)
        extra = {key: value for key, value in _LISTEN_CONNINFO.items() if key not in given}
        self._conninfo = make_conninfo(conninfo, **extra)
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def start(self) -> None:
        """Listen in a task; returns once listening (or after a first failure,
        the task then retrying in the background)."""
        self._task = asyncio.create_task(self._listen_forever(), name="mnemo-change-listen")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), 10.0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await wait_task(self._task, "the change notifier")

    async def _listen_forever(self) -> None:
        delay = _RECONNECT_MIN_S
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, application_name="mnemo-listen"
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    delay = _RECONNECT_MIN_S
                    # Notices sent while not listening are lost: read again.
                    self.wakeups.wake_all()
                    async for notice in conn.notifies():
                        parsed = parse_payload(notice.payload)
                        if parsed is not None:
                            self.wakeups.wake(parsed[0])
            except psycopg.Error as error:
                log.warning("change notifications interrupted (%s); reconnecting", error)
            except Exception:  # anything else must not end the listening for good
                log.exception("change notifications failed unexpectedly; reconnecting")
            self._listening.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RECONNECT_MAX_S)


class SqliteChangeNotifier:
    """In-process wake-ups after commit plus one ``data_version`` poll of the file."""

    def __init__(
        self, database: str, wakeups: Wakeups, cursors: CursorReader, poll_seconds: float
    ) -> None:
        self.wakeups = wakeups
        self._key = _file_key(database) if database else ""
        self._cursors = cursors
        self._poll_seconds = poll_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if not self._key:
            return
        self._loop = asyncio.get_running_loop()
        _LOCAL.add(self._key, self._loop, self.wakeups)
        self._task = asyncio.create_task(self._poll_forever(), name="mnemo-change-poll")

    async def stop(self) -> None:
        if self._loop is not None:
            _LOCAL.remove(self._key, self._loop, self.wakeups)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await wait_task(self._task, "the change notifier")

    async def _poll_forever(self) -> None:
        probe = _DataVersion(self._key)
        known: dict[str, int] = {}
        try:
            version = await asyncio.to_thread(probe.read)
            while True:
                await asyncio.sleep(self._poll_seconds)
                users = self.wakeups.watched_users
                known = {user: cursor for user, cursor in known.items() if user in users}
                try:
                    current = await asyncio.to_thread(probe.read)
                    if current == version or not users:
                        version = current
                        continue
                    version = current
                    latest = await self._cursors.latest_cursors(users)
                except Exception as error:  # the next poll tries again
                    log.warning("polling the SQLite file for changes failed: %s", error)
                    continue
                for user, cursor in latest.items():
                    if cursor != known.get(user):
                        known[user] = cursor
                        self.wakeups.wake(user)
        finally:
            await asyncio.to_thread(probe.close)


class _DataVersion:
    """``PRAGMA data_version`` on a connection of its own: it changes when
    any other connection, of any process, commits to the file.

    ``read`` and ``close`` run in worker threads, and a cancelled poll does
    not stop a ``read`` already running there, so the ``close`` of its
    ``finally`` can arrive while that read is still inside SQLite; closing a
    connection another thread is using crashes the process, hence the lock.
    A ``read`` after ``close`` raises ``sqlite3.ProgrammingError``.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def read(self) -> int:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the data_version probe is closed")
            if self._conn is None:
                self._conn = sqlite3.connect(self._path, check_same_thread=False, timeout=1.0)
            row = self._conn.execute("PRAGMA data_version").fetchone()
            return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
