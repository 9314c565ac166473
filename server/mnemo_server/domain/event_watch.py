"""Live events (``WatchEvents``) by polling the store, bounded in every way.

A watch polls ``GovernanceStore.events_after`` every ``poll_seconds`` (so it
sees events recorded by any server process of the database). The events of
concurrent transactions do not always commit in the order of their
recording times, so every poll re-reads the last ``lag_seconds`` before the
newest event it has seen and skips the events it already sent (remembered
for that window only): an event is delivered once, and one whose transaction
took longer than ``lag_seconds`` to commit after recording it could be
missed (``ListEvents`` still has it). Only events recorded after the watch
started are sent, oldest first; each poll reads at most ``batch`` events per
query, paging until it has caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from mnemo_server.domain.clock import now_micros
from mnemo_server.domain.governance import Event, EventScope, EventType
from mnemo_server.domain.models import Keyset

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class WatchSettings:
    """How watches poll, and how many may run at once."""

    poll_seconds: float = 0.5
    lag_seconds: float = 5.0
    batch: int = 500
    max_watchers: int = 256
    # One client connection's share when authentication is off (``watch_slots``).
    max_watchers_per_peer: int = 100


class EventSource(Protocol):
    async def events_after(
        self, scope: EventScope, types: Collection[EventType], after: Keyset, *, limit: int
    ) -> list[Event]: ...


def _micros(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(microseconds=1)


class EventWatch:
    """One watcher's position in the event stream of a scope."""

    def __init__(
        self,
        source: EventSource,
        scope: EventScope,
        types: Collection[EventType],
        settings: WatchSettings,
    ) -> None:
        self._source = source
        self._scope = scope
        self._types = tuple(types)
        self._settings = settings
        self._lag = int(settings.lag_seconds * 1_000_000)
        self._started = now_micros()
        # The newest recording time seen, and what was seen within the lag window.
        self._horizon = self._started
        self._seen: dict[int, int] = {}

    async def events(self, stopping: asyncio.Event) -> AsyncIterator[Event]:
        """New events until ``stopping`` is set."""
        while not stopping.is_set():
            for event in await self.poll():
                yield event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self._settings.poll_seconds)

    async def poll(self) -> list[Event]:
        """The events not sent yet, oldest first."""
        fresh: list[Event] = []
        after: Keyset = (self._horizon - self._lag, -1)
        while True:
            batch = await self._source.events_after(
                self._scope, self._types, after, limit=self._settings.batch
            )
            for event in batch:
                at = _micros(event.create_time)
                if event.sequence in self._seen:
                    continue
                self._seen[event.sequence] = at
                self._horizon = max(self._horizon, at)
                if at >= self._started:
                    fresh.append(event)
            if len(batch) < self._settings.batch:
                break
            last = batch[-1]
            after = (_micros(last.create_time), last.sequence)
        oldest = self._horizon - self._lag
        self._seen = {seq: at for seq, at in self._seen.items() if at >= oldest}
        return fresh
