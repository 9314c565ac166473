"""``SqlGovernanceStore``: the reads of consent, the memory switch, the
memory gate, the analytics events and the audit records of erasures
(``GovernanceStore``), the governance part of ``SqlStore``.

Each method is one transaction of ``Database`` running a function of
``consent``, ``events`` or ``erasures`` (``store.governance``) (consent and
the memory switch are written by commands: ``SqlStore.execute``; events are
recorded by the next write batch: ``record_events_later``; an erasure's
record by the erasure: ``store.user_data.erase``); the error contracts are
those of ``domain.ports.GovernanceStore``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mnemo_server.domain.governance import (
    Access,
    Consent,
    Event,
    EventScope,
    EventType,
    Gate,
    MemorySettings,
    NewEvent,
    closed_gate,
)
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import UserErasure
from mnemo_server.store.governance import consent, erasures
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.transactions.database import Database

__all__ = ["SqlGovernanceStore"]


class SqlGovernanceStore:
    """Implements ``GovernanceStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_consent(self, user_id: str) -> Consent:
        return await self._db.read(lambda conn: consent.get_consent(conn, user_id), short=True)

    async def get_memory_settings(self, user_id: str) -> MemorySettings:
        return await self._db.read(lambda conn: consent.get_settings(conn, user_id), short=True)

    async def memory_gate(
        self, user_id: str, conversation_ids: Sequence[str], access: Access
    ) -> Gate | None:
        # A few indexed rows (the user's settings, the conversation's flag):
        # on SQLite read at once on the loop, not handed to a read lane (a
        # recall that embeds its query asks this first, then reads again).
        inputs = await self._db.read(
            lambda conn: consent.gate_inputs(conn, user_id, conversation_ids), short=True
        )
        return closed_gate(inputs, access)

    def record_events_later(
        self, caller: Caller | None, user_id: str, events: Sequence[NewEvent]
    ) -> None:
        self._db.defer(lambda tx: event_log.record(tx, caller, user_id, events))

    async def flush_events(self) -> None:
        await self._db.flush()

    async def list_events(
        self,
        scope: EventScope,
        types: Collection[EventType],
        *,
        limit: int,
        after: Keyset | None,
    ) -> Page[Event]:
        return await self._db.read(
            lambda conn: event_log.list_page(conn, scope, types, limit, after)
        )

    async def events_after(
        self, scope: EventScope, types: Collection[EventType], after: Keyset, *, limit: int
    ) -> list[Event]:
        return await self._db.read(
            lambda conn: event_log.oldest_first(conn, scope, types, after, limit)
        )

    async def list_user_erasures(
        self, tenant_id: str, *, limit: int, after: Keyset | None
    ) -> Page[UserErasure]:
        return await self._db.read(lambda conn: erasures.list_page(conn, tenant_id, limit, after))
