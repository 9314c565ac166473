"""``SqlGovernanceStore``: the SQLAlchemy implementation of
``GovernanceStore`` (``SqlStore`` inherits it).

Each method is one transaction of ``Database`` running a unit of work from
``sql_governance``, ``sql_events`` or ``sql_temporary``; the error contracts
are those of ``store.interfaces.GovernanceStore``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mnemo_server.domain.governance import (
    Access,
    Consent,
    ConsentChange,
    ConsentState,
    Event,
    EventScope,
    EventType,
    Gate,
    MemorySettings,
    NewEvent,
    closed_gate,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.store import sql_events, sql_governance, sql_temporary
from mnemo_server.store.convert import now_micros
from mnemo_server.store.database import Database

__all__ = ["SqlGovernanceStore"]


class SqlGovernanceStore:
    """Implements ``GovernanceStore`` over ``self._db`` (set by the class it is mixed into)."""

    _db: Database

    async def get_consent(self, user_id: str) -> Consent:
        return await self._db.read(lambda conn: sql_governance.get_consent(conn, user_id))

    async def set_consent(
        self, user_id: str, state: ConsentState, policy_version: str
    ) -> ConsentChange:
        return await self._db.write(
            lambda conn: sql_governance.set_consent(conn, user_id, state, policy_version)
        )

    async def get_memory_settings(self, user_id: str) -> MemorySettings:
        return await self._db.read(lambda conn: sql_governance.get_settings(conn, user_id))

    async def update_memory_settings(
        self, user_id: str, *, enabled: bool, expected_etag: str | None
    ) -> MemorySettings:
        return await self._db.write(
            lambda conn: sql_governance.update_settings(
                conn, user_id, enabled=enabled, expected_etag=expected_etag
            )
        )

    async def memory_gate(
        self, user_id: str, conversation_ids: Sequence[str], access: Access
    ) -> Gate | None:
        inputs = await self._db.read(
            lambda conn: sql_governance.gate_inputs(conn, user_id, conversation_ids)
        )
        return closed_gate(inputs, access)

    async def record_events(self, user_id: str, events: Sequence[NewEvent]) -> None:
        await self._db.write(lambda conn: sql_events.record(conn, user_id, events))

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
        return await self._db.write(
            lambda conn: sql_temporary.purge_expired(conn, now_micros(), limit)
        )
