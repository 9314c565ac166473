"""``SqlGovernanceStore``: the SQLAlchemy implementation of
``GovernanceStore`` (``SqlStore`` inherits it).

Each method is one transaction of ``Database`` running a function of
``sql_governance``, ``sql_events`` or ``sql_temporary`` (consent and the
memory switch are written by commands: ``SqlStore.execute``); the error
contracts are those of ``store.interfaces.GovernanceStore``.
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
from mnemo_server.store import sql_events, sql_governance, sql_temporary
from mnemo_server.store.convert import now_micros
from mnemo_server.store.database import Database

__all__ = ["SqlGovernanceStore"]


class SqlGovernanceStore:
    """Implements ``GovernanceStore`` over ``self._db`` (set by the class it is mixed into)."""

    _db: Database

    async def get_consent(self, user_id: str) -> Consent:
        return await self._db.read(
            lambda conn: sql_governance.get_consent(conn, user_id), short=True
        )

    async def get_memory_settings(self, user_id: str) -> MemorySettings:
        return await self._db.read(
            lambda conn: sql_governance.get_settings(conn, user_id), short=True
        )

    async def memory_gate(
        self, user_id: str, conversation_ids: Sequence[str], access: Access
    ) -> Gate | None:
        inputs = await self._db.read(
            lambda conn: sql_governance.gate_inputs(conn, user_id, conversation_ids)
        )
        return closed_gate(inputs, access)

    def record_events_later(
        self, caller: Caller | None, user_id: str, events: Sequence[NewEvent]
    ) -> None:
        self._db.defer(lambda tx: sql_events.record(tx, caller, user_id, events))

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
            lambda conn: sql_events.list_page(conn, scope, types, limit, after)
        )

    async def events_after(
        self, scope: EventScope, types: Collection[EventType], after: Keyset, *, limit: int
    ) -> list[Event]:
        return await self._db.read(
            lambda conn: sql_events.oldest_first(conn, scope, types, after, limit)
        )

    async def purge_expired_conversations(self, *, limit: int) -> int:
        purged, _ = await self._db.write(
            lambda tx: sql_temporary.purge_expired(tx, now_micros(), limit), alone=True
        )
        return purged
