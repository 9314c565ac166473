"""Following a user's change feed forever, resuming by itself.

::

    follower = ChangeFollower(client, "u1", after_cursor=saved_cursor, on_resync=reload)
    for event in follower:              # AsyncChangeFollower: async for
        if isinstance(event, Change):
            apply(event)
            saved_cursor = follower.cursor
        # else a Heartbeat: caught up; event.cursor is the user's latest

Every watch starts after ``follower.cursor`` (the last change yielded), so
across reconnects no change is missed or yielded twice. A watch is resumed:

- at once when it ends cleanly (the server shut down; after a backoff if
  it ended before sending anything) or with ``ABORTED`` ``WATCH_LAGGING``
  (the loop body took too long for the server);
- after a backoff (0.1 s doubling up to ``max_backoff``, jittered; back to
  0.1 s once a message arrives) on every transient error: ``UNAVAILABLE``
  (the server or its database cannot serve now, e.g. PostgreSQL restarting
  or a backend killed), ``INTERNAL`` and ``UNKNOWN`` (a proxy's or a
  server's fault; a persistent one keeps the follower retrying every
  ``max_backoff``), ``CANCELLED``, ``DEADLINE_EXCEEDED`` (each watch lasts at
  most ``watch_timeout`` seconds), ``RESOURCE_EXHAUSTED`` (too many watches)
  and ``ABORTED`` ``CONCURRENT_MODIFICATION``.

Resync: ``OUT_OF_RANGE`` with ``CURSOR_EXPIRED`` (the changes after the
cursor are no longer retained) or ``CURSOR_AHEAD`` (the cursor is beyond the
user's latest: it came from another database, e.g. after a restore, so what
the application holds is not this database's state either) means the
application's copy is out of step and must be rebuilt. With ``on_resync``
(given the ``OutOfRangeError``; its ``reason`` says which) or the older
``on_expired`` (no argument, called for both reasons), the follower reads the
user's latest cursor, calls the handler (which reloads everything it keeps,
e.g. with the list methods) and goes on after that latest cursor; changes
made during the reload come again, and applying a change twice must be
harmless (it is for upserts and deletes by name). Without a handler the
error is raised. Should the read of the latest cursor fail transiently, the
follower backs off and watches again (which resyncs again).

``on_error``, if given, is called with every error the follower recovers
from, before it resumes, backs off or resyncs (for logging); any other error
(``INVALID_ARGUMENT``, ``UNAUTHENTICATED``, ``PERMISSION_DENIED``, ...) is
raised from the iteration.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Literal, TypeVar

from mnemo.client._async import AsyncMnemoClient
from mnemo.client._sync import MnemoClient
from mnemo.client.errors import (
    AbortedError,
    CallCancelledError,
    DeadlineExceededError,
    InternalError,
    MnemoError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnavailableError,
    UnknownError,
)
from mnemo.v1.sync_pb2 import Change, Heartbeat, WatchChangesResponse

_FIRST_BACKOFF_S = 0.1
_TRANSIENT = (
    UnavailableError,
    InternalError,
    UnknownError,
    CallCancelledError,
    DeadlineExceededError,
    ResourceExhaustedError,
)
RESYNC_REASONS = frozenset({"CURSOR_EXPIRED", "CURSOR_AHEAD"})
"""The ``OUT_OF_RANGE`` reasons after which a follower resyncs."""

Next = Literal["resume", "backoff", "resync"]
R = TypeVar("R")


def next_step(error: MnemoError) -> Next:
    """What a follower does after ``error`` ended a watch; raises it if fatal."""
    if isinstance(error, AbortedError):
        if error.reason == "WATCH_LAGGING":
            return "resume"
        if error.reason == "CONCURRENT_MODIFICATION":
            return "backoff"
    if isinstance(error, _TRANSIENT):
        return "backoff"
    if isinstance(error, OutOfRangeError) and error.reason in RESYNC_REASONS:
        return "resync"
    raise error


def backoff(failures: int, max_backoff: float) -> float:
    """Seconds to wait after ``failures`` transient failures in a row (jittered)."""
    ceiling = min(max_backoff, _FIRST_BACKOFF_S * 2.0 ** max(failures - 1, 0))
    return ceiling * random.uniform(0.5, 1.0)


def _handler(
    on_resync: Callable[[OutOfRangeError], R] | None,
    on_expired: Callable[[], R] | None,
) -> Callable[[OutOfRangeError], R] | None:
    if on_resync is not None and on_expired is not None:
        raise ValueError("give on_resync or on_expired, not both")
    if on_expired is not None:
        return lambda _error: on_expired()
    return on_resync


class _FollowerBase:
    def __init__(
        self,
        user: str,
        after_cursor: int,
        watch_timeout: float,
        max_backoff: float,
        on_error: Callable[[MnemoError], None] | None,
    ) -> None:
        #: The user followed.
        self.user = user
        #: The cursor of the last change yielded (where the next watch starts).
        self.cursor = after_cursor
        self._watch_timeout = watch_timeout
        self._max_backoff = max_backoff
        self._on_error = on_error
        self._failures = 0

    def _take(self, response: WatchChangesResponse) -> Change | Heartbeat:
        self._failures = 0
        if response.HasField("change"):
            self.cursor = response.change.cursor
            return response.change
        return response.heartbeat

    def _after(self, error: MnemoError, can_resync: bool) -> Next:
        """The step after ``error`` ended a watch (reported to ``on_error``);
        raises it if fatal, or a resync without a handler."""
        step = next_step(error)
        if step == "resync" and not can_resync:
            raise error
        if self._on_error is not None:
            self._on_error(error)
        return step

    def _resync_read_failed(self, error: MnemoError) -> Next:
        """The read of the latest cursor for a resync failed: back off if transient."""
        if next_step(error) != "backoff":
            raise error
        if self._on_error is not None:
            self._on_error(error)
        return "backoff"

    def _delay(self, step: Next) -> float:
        if step != "backoff":
            return 0.0
        self._failures += 1
        return backoff(self._failures, self._max_backoff)


class ChangeFollower(_FollowerBase):
    """Iterates over a user's changes (and heartbeats) forever with a
    ``MnemoClient``; see the module docstring."""

    def __init__(
        self,
        client: MnemoClient,
        user: str,
        *,
        after_cursor: int = 0,
        on_resync: Callable[[OutOfRangeError], None] | None = None,
        on_expired: Callable[[], None] | None = None,
        on_error: Callable[[MnemoError], None] | None = None,
        watch_timeout: float = 300.0,
        max_backoff: float = 5.0,
    ) -> None:
        super().__init__(user, after_cursor, watch_timeout, max_backoff, on_error)
        self._client = client
        self._on_resync = _handler(on_resync, on_expired)

    def __iter__(self) -> Iterator[Change | Heartbeat]:
        while True:
            try:
                received = False
                for response in self._client.watch_changes(
                    self.user, after_cursor=self.cursor, timeout=self._watch_timeout
                ):
                    received = True
                    yield self._take(response)
                step: Next = "resume" if received else "backoff"  # a clean end: shutdown
            except MnemoError as error:
                step = self._after(error, self._on_resync is not None)
                if step == "resync":
                    step = self._resync(error)
            time.sleep(self._delay(step))

    def _resync(self, error: MnemoError) -> Next:
        assert isinstance(error, OutOfRangeError) and self._on_resync is not None
        try:
            latest = self._client.list_changes(self.user, page_size=1).latest_cursor
        except MnemoError as failed:
            return self._resync_read_failed(failed)
        self._on_resync(error)
        self.cursor = latest
        return "resume"


class AsyncChangeFollower(_FollowerBase):
    """``ChangeFollower`` for an ``AsyncMnemoClient``: ``async for`` over it;
    ``on_resync`` and ``on_expired`` are coroutine functions."""

    def __init__(
        self,
        client: AsyncMnemoClient,
        user: str,
        *,
        after_cursor: int = 0,
        on_resync: Callable[[OutOfRangeError], Awaitable[None]] | None = None,
        on_expired: Callable[[], Awaitable[None]] | None = None,
        on_error: Callable[[MnemoError], None] | None = None,
        watch_timeout: float = 300.0,
        max_backoff: float = 5.0,
    ) -> None:
        super().__init__(user, after_cursor, watch_timeout, max_backoff, on_error)
        self._client = client
        self._on_resync = _handler(on_resync, on_expired)

    async def __aiter__(self) -> AsyncIterator[Change | Heartbeat]:
        while True:
            try:
                received = False
                async for response in self._client.watch_changes(
                    self.user, after_cursor=self.cursor, timeout=self._watch_timeout
                ):
                    received = True
                    yield self._take(response)
                step: Next = "resume" if received else "backoff"  # a clean end: shutdown
            except MnemoError as error:
                step = self._after(error, self._on_resync is not None)
                if step == "resync":
                    step = await self._resync(error)
            await asyncio.sleep(self._delay(step))

    async def _resync(self, error: MnemoError) -> Next:
        assert isinstance(error, OutOfRangeError) and self._on_resync is not None
        try:
            page = await self._client.list_changes(self.user, page_size=1)
        except MnemoError as failed:
            return self._resync_read_failed(failed)
        await self._on_resync(error)
        self.cursor = page.latest_cursor
        return "resume"
