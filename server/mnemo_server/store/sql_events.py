"""Analytics events (``events``): recording inside the transaction of the
operation they describe (what each operation records: ``domain.events``),
the newest-first listing, and the oldest-first reads ``WatchEvents`` polls.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, insert, literal, select, tuple_

from mnemo_server.domain.governance import Event, EventScope, EventType, NewEvent
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.store.convert import now_micros, to_datetime
from mnemo_server.store.schema import events, users


def new_event_id() -> str:
    return secrets.token_hex(8)


def record(conn: Connection, user_id: str, new: Sequence[NewEvent], now: int | None = None) -> None:
    """Record ``new`` for ``user_id`` (an existing user), with the user's tenant."""
    if not new:
        return
    at = now_micros() if now is None else now
    for event in new:
        attributes = json.dumps(event.attributes, sort_keys=True, separators=(",", ":"))
        conn.execute(
            insert(events).from_select(
                ["user_id", "tenant_id", "event_id", "type", "attributes_json", "created_at"],
                select(
                    users.c.user_id,
                    users.c.tenant_id,
                    literal(new_event_id(), events.c.event_id.type),
                    literal(event.type.value, events.c.type.type),
                    literal(attributes, events.c.attributes_json.type),
                    literal(at, events.c.created_at.type),
                ).where(users.c.user_id == user_id),
            )
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
    statement = _scoped(scope, types)
    if after is not None:
        statement = statement.where(
            tuple_(events.c.created_at, events.c.id) < tuple_(int(after[0]), int(after[1]))
        )
    found = conn.execute(
        statement.order_by(events.c.created_at.desc(), events.c.id.desc()).limit(limit + 1)
    ).all()
    items = tuple(_event(row) for row in found[:limit])
    if len(found) <= limit:
        return Page(items)
    last = found[limit - 1]
    return Page(items, next_after=(last.created_at, last.id))


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
