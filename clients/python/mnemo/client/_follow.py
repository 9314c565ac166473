"""Following a user's change feed forever, resuming by itself.

::

    follower = ChangeFollower(client, "u1", after_cursor=saved_cursor, on_expired=resync)
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
- after a backoff (0.1 s doubling up to ``max_backoff``) on ``UNAVAILABLE``,
  ``CANCELLED``, ``DEADLINE_EXCEEDED`` (each watch lasts at most
  ``watch_timeout`` seconds) and ``RESOURCE_EXHAUSTED`` (too many watches).

``OUT_OF_RANGE`` ``CURSOR_EXPIRED`` (the changes after the cursor are no
longer retained) raises ``OutOfRangeError`` unless ``on_expired`` is given:
the follower then reads the user's latest cursor, calls ``on_expired()``
(which reloads everything it keeps, e.g. with the list methods) and goes on
after that latest cursor; changes made during the reload come again, and
applying a change twice must be harmless (it is for upserts and deletes by
name). Any other error is raised.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Literal

from mnemo.client._async import AsyncMnemoClient
from mnemo.client._sync import MnemoClient
from mnemo.client.errors import (
    AbortedError,
    CallCancelledError,
    DeadlineExceededError,
    MnemoError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnavailableError,
)
from mnemo.v1.sync_pb2 import Change, Heartbeat, WatchChangesResponse

_FIRST_BACKOFF_S = 0.1
_TRANSIENT = (UnavailableError, CallCancelledError, DeadlineExceededError, ResourceExhaustedError)

Next = Literal["resume", "backoff", "expired"]


def next_step(error: MnemoError) -> Next:
    """What a follower does after ``error`` ended a watch; raises it if fatal."""
    if isinstance(error, AbortedError) and error.reason == "WATCH_LAGGING":
        return "resume"
    if isinstance(error, _TRANSIENT):
        return "backoff"
    if isinstance(error, OutOfRangeError) and error.reason == "CURSOR_EXPIRED":
        return "expired"
    raise error


def backoff(failures: int, max_backoff: float) -> float:
    """Seconds to wait after ``failures`` transient failures in a row (jittered)."""
    ceiling = min(max_backoff, _FIRST_BACKOFF_S * 2.0 ** max(failures - 1, 0))
    return ceiling * random.uniform(0.5, 1.0)


class _FollowerBase:
    def __init__(
        self, user: str, after_cursor: int, watch_timeout: float, max_backoff: float
    ) -> None:
        #: The user followed.
        self.user = user
        #: The cursor of the last change yielded (where the next watch starts).
        self.cursor = after_cursor
        self._watch_timeout = watch_timeout
        self._max_backoff = max_backoff
        self._failures = 0

    def _take(self, response: WatchChangesResponse) -> Change | Heartbeat:
        self._failures = 0
        if response.HasField("change"):
            self.cursor = response.change.cursor
            return response.change
        return response.heartbeat

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
        on_expired: Callable[[], None] | None = None,
        watch_timeout: float = 300.0,
        max_backoff: float = 5.0,
    ) -> None:
        super().__init__(user, after_cursor, watch_timeout, max_backoff)
        self._client = client
        self._on_expired = on_expired

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
                step = next_step(error)
                if step == "expired":
                    if self._on_expired is None:
                        raise
                    latest = self._client.list_changes(self.user, page_size=1).latest_cursor
                    self._on_expired()
                    self.cursor = latest
            time.sleep(self._delay(step))


class AsyncChangeFollower(_FollowerBase):
    """``ChangeFollower`` for an ``AsyncMnemoClient``: ``async for`` over it;
    ``on_expired`` is a coroutine function."""

    def __init__(
        self,
        client: AsyncMnemoClient,
        user: str,
        *,
        after_cursor: int = 0,
        on_expired: Callable[[], Awaitable[None]] | None = None,
        watch_timeout: float = 300.0,
        max_backoff: float = 5.0,
    ) -> None:
        super().__init__(user, after_cursor, watch_timeout, max_backoff)
        self._client = client
        self._on_expired = on_expired

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
                step = next_step(error)
                if step == "expired":
                    if self._on_expired is None:
                        raise
                    page = await self._client.list_changes(self.user, page_size=1)
                    await self._on_expired()
                    self.cursor = page.latest_cursor
            await asyncio.sleep(self._delay(step))
