"""Governance use cases: consent, the memory switch, the analytics events
(listing and live watching) and the tenant's audit records of erasures, on
top of ``GovernanceStore``.

Consent and the switch only change what the gates decide
(``domain.governance``); the gates themselves are checked by the store inside
every memory write. Withdrawing consent cancels the pending candidates in
the same transaction and keeps every entry.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Collection

from mnemo_server.domain.event_watch import EventWatch, WatchSettings
from mnemo_server.domain.governance import (
    Consent,
    Event,
    EventScope,
    EventType,
    MemorySettings,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.ports import GovernanceStore
from mnemo_server.domain.user_data import UserErasure
from mnemo_server.domain.watch_slots import SlotLimits, WatchSlots


class Governance:
    """Consent, settings and events of users and tenants.

    ``stopping`` is set when the server shuts down: every ``watch`` stream
    then ends. At most ``watch.max_watchers`` streams run at once.
    """

    def __init__(
        self,
        store: GovernanceStore,
        stopping: asyncio.Event,
        watch: WatchSettings | None = None,
    ) -> None:
        self._store = store
        self._stopping = stopping
        self._watch = watch or WatchSettings()
        self._slots = WatchSlots(
            SlotLimits(
                "event",
                "ListEvents",
                total=self._watch.max_watchers,
                per_peer=self._watch.max_watchers_per_peer,
            )
        )

    async def get_consent(self, user_id: str) -> Consent:
        """Granted (no update time) for a user who never set it."""
        return await self._store.get_consent(user_id)

    async def get_settings(self, user_id: str) -> MemorySettings:
        """Enabled (etag ``""``) for a user who never set them."""
        return await self._store.get_memory_settings(user_id)

    async def list_events(
        self,
        scope: EventScope,
        types: Collection[EventType],
        *,
        limit: int,
        after: Keyset | None,
    ) -> Page[Event]:
        """Newest first; ``types`` empty means every type. Events recorded by
        this process's reads before the call are included."""
        await self._store.flush_events()
        return await self._store.list_events(scope, types, limit=limit, after=after)

    async def list_user_erasures(
        self, tenant_id: str, *, limit: int, after: Keyset | None
    ) -> Page[UserErasure]:
        """The audit records of the erasures of ``tenant_id``'s users by
        someone other than the user, newest first (who may read them is the
        edge's check)."""
        return await self._store.list_user_erasures(tenant_id, limit=limit, after=after)

    async def watch(
        self, scope: EventScope, types: Collection[EventType], peer: str | None
    ) -> AsyncGenerator[Event, None]:
        """The events recorded from now on, oldest first, until the server
        shuts down or the caller stops. ``peer``: the client connection when
        authentication is off, else ``None``. Raises ``ResourceExhausted``
        (``RATE_LIMITED``) when ``max_watchers`` streams are running, or
        ``max_watchers_per_peer`` of this ``peer``'s."""
        with self._slots.taken(None, peer):
            watch = EventWatch(self._store, scope, types, self._watch)
            async for event in watch.events(self._stopping):
                yield event
