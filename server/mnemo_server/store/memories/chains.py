"""Keyed chains on the event-time axis, as the store reads and writes them.

The rules (where a keyed save belongs, which entry it supersedes) are the
domain's (``domain.validity``: the ``Link`` of an entry, ``place``,
``plan_saves``); here are the statements a save call runs for them
(``writes.insert_entries``): ``archive_older_live`` (the common case: one
``UPDATE`` archives the live entry of the chain if its event time is not
later), ``stored_links`` (a chain's entries whose validity reaches past the
earliest event time the call saves in it, read once per chain through
``ix_memories_key_event``) and ``write_stored`` (the stored links whose
validity the call changed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, or_, select, update

from mnemo_server.domain.validity import Chain, Link
from mnemo_server.store.rows import new_etag
from mnemo_server.store.schema import memories


def archive_older_live(
    conn: Connection, user_id: str, chain: Chain, event: int, now: int
) -> list[Row[Any]]:
    """Archive the live entry of ``chain`` if its event time is at or before
    ``event`` (its validity ends at ``event``); the archived rows."""
    scope, conversation_id, key = chain
    found = conn.execute(
        update(memories)
        .where(
            memories.c.user_id == user_id,
            memories.c.scope == scope,
            memories.c.conversation_id == conversation_id,
            memories.c.key == key,
            memories.c.archived_at.is_(None),
            memories.c.event_at <= event,
        )
        .values(archived_at=now, valid_until=event, etag=new_etag())
        .returning(*memories.c)
    ).all()
    return list(found)


def stored_links(conn: Connection, user_id: str, chain: Chain, since: int) -> list[Link]:
    """The stored entries of ``chain`` whose validity reaches past ``since``
    (the live one, those valid past it, those with a later event time)."""
    scope, conversation_id, key = chain
    found = conn.execute(
        select(
            memories.c.id,
            memories.c.memory_id,
            memories.c.event_at,
            memories.c.valid_until,
            memories.c.archived_at,
            memories.c.fingerprint,
        )
        .where(
            memories.c.user_id == user_id,
            memories.c.scope == scope,
            memories.c.conversation_id == conversation_id,
            memories.c.key == key,
            or_(
                memories.c.valid_until.is_(None),
                memories.c.valid_until > since,
                memories.c.event_at > since,
            ),
        )
        .order_by(memories.c.event_at, memories.c.id)
    ).all()
    return [
        Link(
            row.event_at,
            row.valid_until,
            row.archived_at is None,
            row.id,
            row.memory_id,
            row.fingerprint,
        )
        for row in found
    ]


def write_stored(conn: Connection, user_id: str, links: Sequence[Link]) -> list[Row[Any]]:
    """Write the changed validity (and archive time) of the stored
    ``links`` this call touched; the rows as they are now."""
    changed: list[Row[Any]] = []
    for link in links:
        if link.pk is None or not link.touched:
            continue
        values: dict[str, Any] = {"valid_until": link.valid_until, "etag": new_etag()}
        if link.archived_at is not None:
            values["archived_at"] = link.archived_at
        changed += conn.execute(
            update(memories)
            .where(memories.c.user_id == user_id, memories.c.id == link.pk)
            .values(**values)
            .returning(*memories.c)
        ).all()
    return changed
