"""Watching a user's change feed (``SyncService.WatchChanges``) without polling hot.

A watch reads the store from its cursor, oldest first, in batches of
``batch`` (``ChangeStore.changes_after``), and never buffers changes itself:
it sends what one read returned, then reads again from the last cursor it
sent. So a change is sent once, in cursor order, with no gap, whatever the
wake-ups do: a wake-up only says "read again now".

Wake-ups come from ``Wakeups``: the process's change notifier
(``store.feed.notify``) calls ``wake(user_id)`` when a change of that user
may have committed (PostgreSQL NOTIFY from any process; on SQLite an
in-process commit or the per-process poll of the file). A watch that was not
woken reads again after ``heartbeat_seconds`` anyway (the slow safety
re-read) and, finding nothing, yields a ``Heartbeat``. The first heartbeat is
yielded as soon as the backlog is sent (the watch is live from then on).

Every read is the caller's (``ChangeStore.changes_after(caller=...)``): a
user's feed is its tenant's, so a watch of a tenant whose user was erased
and whose id another tenant then took ends with ``CURSOR_AHEAD`` at its next
read instead of receiving the new user's changes.

Watches of one user and tenant woken at the same cursor share one store read
(``ChangeFeed._read``): a hundred watches woken by one commit read the store
once, not a hundred times (a noisy neighbour, ``make bench-neighbour``). A
woken watch reuses a read (in flight or done) only if it started after the
same wake-up as its own (``Wakeups.generation``), so a commit the read may
have missed has woken it again; a first read and the heartbeat's safety
re-read are never shared.

``Wakeups.close()`` (server shutdown) ends every watch: its iteration simply
stops, so the RPC ends with OK and the client resumes from its last cursor.

Change-feed lag (``Observer.change_delivered``): for each change a watch
yields once it is live (its backlog sent, after its first heartbeat), the
seconds from the change's ``change_time`` (the writing transaction's clock,
just before its commit) to the moment the watch hands it to its stream. It
covers the commit, the wake-up and the read; a backlog sent on resuming
from an old cursor is not counted (its age is not lag).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from mnemo_server.domain.changes import Change, ChangePage
from mnemo_server.domain.errors import Unavailable
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.observe import NO_OBSERVER, Observer
from mnemo_server.domain.ports import ChangeStore
from mnemo_server.domain.watch_slots import SlotLimits, WatchSlots


@dataclass(frozen=True)
class ChangeWatchSettings:
    """How watches behave; the ``--watch-*`` options (``config``)."""

    heartbeat_seconds: float = 15.0
    # How long one message may wait for a consumer that does not read
    # (api.sync: then ABORTED WATCH_LAGGING).
    send_timeout_seconds: float = 10.0
    max_watchers: int = 1000
    # One user's share, so that one user cannot take every watch of the process.
    max_watchers_per_user: int = 100
    # One client connection's share when authentication is off (``watch_slots``).
    max_watchers_per_peer: int = 100
    batch: int = 100


@dataclass(frozen=True)
class Heartbeat:
    """Nothing new: the user's newest cursor at ``time``."""

    cursor: int
    time: datetime


_ReadKey = tuple[int, tuple[int, int], str | None]
"""A woken read: its cursor, wake-up generation and reader's tenant (``None``:
``--auth none``)."""


class Wakeups:
    """The watches of one process, by user, and their wake-up flags.

    Every method runs on the event loop of the watches (a notifier running
    elsewhere goes through ``loop.call_soon_threadsafe``).
    """

    def __init__(self) -> None:
        self._flags: dict[str, set[asyncio.Event]] = {}
        self._wakes: dict[str, int] = {}
        self._wake_alls = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def watched_users(self) -> frozenset[str]:
        """The users with at least one watch."""
        return frozenset(self._flags)

    @property
    def watch_count(self) -> int:
        return sum(len(flags) for flags in self._flags.values())

    @contextlib.contextmanager
    def subscribe(self, user_id: str) -> Iterator[asyncio.Event]:
        """A flag set by every ``wake`` of ``user_id`` (and by ``close``)
        while the ``with`` block runs."""
        flag = asyncio.Event()
        if self._closed:
            flag.set()
        self._flags.setdefault(user_id, set()).add(flag)
        try:
            yield flag
        finally:
            flags = self._flags.get(user_id)
            if flags is not None:
                flags.discard(flag)
                if not flags:
                    del self._flags[user_id]
                    self._wakes.pop(user_id, None)

    def generation(self, user_id: str) -> tuple[int, int]:
        """Changes with every wake-up that reaches ``user_id``'s watches."""
        return self._wake_alls, self._wakes.get(user_id, 0)

    def wake(self, user_id: str) -> None:
        """A change of ``user_id`` may have committed: its watches read again."""
        flags = self._flags.get(user_id)
        if not flags:
            return
        self._wakes[user_id] = self._wakes.get(user_id, 0) + 1
        for flag in flags:
            flag.set()

    def wake_all(self) -> None:
        """Every watch reads again (after a notifier may have missed wake-ups)."""
        self._wake_alls += 1
        for flags in self._flags.values():
            for flag in flags:
                flag.set()

    def close(self) -> None:
        """End every watch, now and later (server shutdown)."""
        self._closed = True
        self.wake_all()


class ChangeFeed:
    """Listing and watching users' change feeds over a ``ChangeStore``."""

    def __init__(
        self,
        store: ChangeStore,
        wakeups: Wakeups,
        settings: ChangeWatchSettings,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self._store = store
        self._wakeups = wakeups
        self._settings = settings
        self._observer = observer
        self._slots = WatchSlots(
            SlotLimits(
                "change",
                "ListChanges",
                total=settings.max_watchers,
                per_user=settings.max_watchers_per_user,
                per_peer=settings.max_watchers_per_peer,
            )
        )
        # Per user: the last woken read, by cursor, wake-up generation and
        # reader's tenant (``_read``).
        self._shared: dict[str, tuple[_ReadKey, asyncio.Future[ChangePage]]] = {}

    @property
    def settings(self) -> ChangeWatchSettings:
        return self._settings

    @property
    def watch_count(self) -> int:
        """The change watches running now."""
        return self._slots.count

    async def list_changes(
        self, caller: Caller | None, user_id: str, after_cursor: int, *, limit: int
    ) -> ChangePage:
        """Up to ``limit`` changes after ``after_cursor``, as ``caller`` may
        read them (``ChangeStore.changes_after``); raises ``OutOfRange``
        (``CURSOR_EXPIRED``) for a cursor older than the retained history and
        (``CURSOR_AHEAD``) for one beyond the user's latest cursor."""
        return await self._store.changes_after(user_id, after_cursor, limit=limit, caller=caller)

    async def watch(
        self, caller: Caller | None, user_id: str, after_cursor: int, peer: str | None
    ) -> AsyncGenerator[Change | Heartbeat, None]:
        """The changes after ``after_cursor``, then live ones, with heartbeats,
        until the server shuts down (the iteration ends) or the caller stops;
        every read as ``caller`` may read the feed (module doc).
        ``peer``: the client connection when authentication is off, else ``None``.

        Raises ``ResourceExhausted`` (``RATE_LIMITED``) when ``max_watchers``
        watches run already, or ``max_watchers_per_user`` of this user's, or
        ``max_watchers_per_peer`` of this ``peer``'s, ``OutOfRange`` (``CURSOR_EXPIRED``) when the
        cursor is (or, for a watch that fell behind the retention, becomes)
        older than the retained history, ``OutOfRange`` (``CURSOR_AHEAD``)
        when it is beyond the user's latest cursor (raised by the first
        read, before anything is yielded), and ``Unavailable`` when the store
        cannot be reached (the caller resumes from its last cursor) or the
        server is shutting down (a watch begun then would end at once with
        nothing: its caller could not tell that from a live, quiet feed).
        """
        if self._wakeups.closed:
            raise Unavailable(
                "the server is shutting down; watch again in a moment", reason="UNAVAILABLE"
            )
        with self._slots.taken(user_id, peer):
            try:
                with self._wakeups.subscribe(user_id) as woken:
                    async for item in self._follow(caller, user_id, after_cursor, woken):
                        yield item
            finally:
                if self._slots.held_by(user_id) == 1:  # this watch was the user's last
                    self._shared.pop(user_id, None)

    async def _follow(
        self, caller: Caller | None, user_id: str, cursor: int, woken: asyncio.Event
    ) -> AsyncIterator[Change | Heartbeat]:
        settings = self._settings
        caught_up = False
        quiet_since = time.monotonic()
        while not self._wakeups.closed:
            # Cleared before the read: a wake-up during the read is not lost.
            was_woken = woken.is_set() and caught_up
            woken.clear()
            page = await self._read(caller, user_id, cursor, was_woken)
            for change in page.changes:
                if caught_up:
                    lag = (datetime.now(UTC) - change.change_time).total_seconds()
                    self._observer.change_delivered(lag)
                yield change
                cursor = change.cursor
            if len(page.changes) >= settings.batch:
                continue
            now = time.monotonic()
            if page.changes:
                quiet_since = now
            if not caught_up or now - quiet_since >= settings.heartbeat_seconds:
                caught_up = True
                quiet_since = now
                yield Heartbeat(max(page.latest_cursor, cursor), datetime.now(UTC))
            # close() sets the flag too: the wait ends and so does the loop.
            remaining = settings.heartbeat_seconds - (time.monotonic() - quiet_since)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), max(remaining, 0.0))

    async def _read(
        self, caller: Caller | None, user_id: str, cursor: int, woken: bool
    ) -> ChangePage:
        """``changes_after(user_id, cursor)`` as ``caller``; for a ``woken``
        watch, shared with the other woken watches of the user at that cursor
        since the same wake-up, of a caller of the same tenant (see the module
        docstring). A shared read is shielded: a watch that stops does not
        cancel it for the others."""
        batch = self._settings.batch
        if not woken:
            return await self._store.changes_after(user_id, cursor, limit=batch, caller=caller)
        tenant = None if caller is None else caller.tenant_id
        key = (cursor, self._wakeups.generation(user_id), tenant)
        last = self._shared.get(user_id)
        if last is not None and last[0] == key:
            shared = last[1]
        else:
            shared = asyncio.ensure_future(
                self._store.changes_after(user_id, cursor, limit=batch, caller=caller)
            )
            shared.add_done_callback(_retrieve)
            self._shared[user_id] = (key, shared)
        return await asyncio.shield(shared)


def _retrieve(done: asyncio.Future[ChangePage]) -> None:
    """Retrieve a shared read's exception: every waiter may have gone."""
    if not done.cancelled():
        done.exception()
