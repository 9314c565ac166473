"""Analytics events (``events``): recording inside the transaction of the
operation they describe (what each operation records: ``domain.events``),
the newest-first listing, and the oldest-first reads ``WatchEvents`` polls.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, bindparam, select, tuple_

from mnemo_server.domain.events import attributed
from mnemo_server.domain.governance import Event, EventScope, EventType, NewEvent
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.store import paging
from mnemo_server.store.engine.statements import Statement, insert_row
from mnemo_server.store.rows import now_micros, to_datetime
from mnemo_server.store.schema import events, users
from mnemo_server.store.transactions.tx import Tx


def new_event_id() -> str:
    return secrets.token_hex(8)


_TENANT = Statement(select(users.c.tenant_id).where(users.c.user_id == bindparam("user_id")))
_INSERT = Statement(insert_row(events))


def record(
    tx: Tx,
    caller: Caller | None,
    user_id: str,
    new: Sequence[NewEvent],
    now: int | None = None,
    *,
    tenant_id: str | None = None,
) -> None:
    """Record ``new``, made by ``caller``'s call, for ``user_id`` with the
    user's tenant (``tenant_id`` when the write knows it already; nothing for
    a user that does not exist). A caller acting for another user is named
    as ``actor`` (``domain.events.attributed``). One or two statements
    however many events."""
    if not new:
        return
    new = attributed(new, caller, user_id)
    if tenant_id is None:
        tenant_id = _TENANT.scalar(tx, user_id=user_id)
        if tenant_id is None:
            return
    at = now_micros() if now is None else now
    _INSERT.many(
        tx,
        [
            {
                "user_id": user_id,
                "tenant_id": tenant_id,
                "event_id": new_event_id(),
                "type": event.type.value,
                "attributes_json": json.dumps(
                    event.attributes, sort_keys=True, separators=(",", ":")
                ),
                "created_at": at,
            }
            for event in new
        ],
    )


# ---------------------------------------------------------------- reading


def _event(row: Row[Any]) -> Event:
    return Event(
        user_id=row.user_id,
        tenant_id=row.tenant_id,
        event_id=row.event_id,
        type=EventType(row.type),
        attributes=json.loads(row.attributes_json),
        create_time=to_datetime(row.created_at),
        sequence=row.id,
    )


def _scoped(scope: EventScope, types: Collection[EventType]) -> Select[Any]:
    where: ColumnElement[bool] = (
        events.c.user_id == scope.user_id
        if scope.user_id is not None
        else events.c.tenant_id == scope.tenant_id
    )
    statement = select(events).where(where)
    if types:
        statement = statement.where(events.c.type.in_(sorted(t.value for t in types)))
    return statement


def list_page(
    conn: Connection,
    scope: EventScope,
    types: Collection[EventType],
    limit: int,
    after: Keyset | None,
) -> Page[Event]:
    """Newest first; keyset ``(created_at micros, sequence)``."""
    statement = paging.newest_first(
        _scoped(scope, types),
        (events.c.created_at, events.c.id),
        paging.typed(after, (int, int)),
        limit,
    )
    return paging.read_page(conn, statement, limit, _event, lambda row: (row.created_at, row.id))


def oldest_first(
    conn: Connection,
    scope: EventScope,
    types: Collection[EventType],
    after: Keyset,
    limit: int,
) -> list[Event]:
    """Up to ``limit`` events after keyset ``(created_at micros, sequence)``,
    oldest first (what a watcher polls)."""
    statement = _scoped(scope, types).where(
        tuple_(events.c.created_at, events.c.id) > tuple_(int(after[0]), int(after[1]))
    )
    found = conn.execute(statement.order_by(events.c.created_at, events.c.id).limit(limit)).all()
    return [_event(row) for row in found]
