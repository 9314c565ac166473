"""Reads of memory entries: one entry, and the newest-first listing.

Both read the user's memory switch in the same statement (the read gate:
``MEMORY_DISABLED``), and both are prebuilt (``store.engine.statements``): a
listing's statement is built once per combination of the filters it uses.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, bindparam, select, tuple_

from mnemo_server.domain.governance import Gate, gate_error
from mnemo_server.domain.memory_models import Memory, MemoryListQuery
from mnemo_server.domain.models import Page
from mnemo_server.store import paging
from mnemo_server.store.engine.dialect import bytewise
from mnemo_server.store.engine.statements import Statement
from mnemo_server.store.governance.consent import check_read_gate
from mnemo_server.store.memories import rows, timeline
from mnemo_server.store.rows import to_micros
from mnemo_server.store.schema import memories, user_settings

_c = memories.c
# The switch of the entries' user beside each entry (NULL: never set, on).
_ENABLED = user_settings.c.memory_enabled.label("memory_enabled")
_FROM = rows.MEMORY_FROM.outerjoin(user_settings, user_settings.c.user_id == _c.user_id)
_GET = Statement(
    select(*rows.MEMORY_COLUMNS, _ENABLED)
    .select_from(_FROM)
    .where(_c.user_id == bindparam("user_id"), _c.memory_id == bindparam("memory_id"))
)


def _gate(user_id: str, memory_enabled: Any) -> None:
    if memory_enabled is not None and not memory_enabled:
        raise gate_error(Gate.MEMORY_DISABLED, user_id)


def get(conn: Connection, user_id: str, memory_id: str) -> Memory:
    """Archived or not, with its vector. Raises ``MEMORY_DISABLED`` (the
    read gate), ``NotFound``."""
    found = _GET.first(conn, user_id=user_id, memory_id=memory_id)
    if found is None:
        check_read_gate(conn, user_id)  # the gate first, as for any read
        raise rows.memory_not_found(user_id, memory_id)
    _gate(user_id, found.memory_enabled)
    return rows.memory(found)


@functools.cache
def _listing(
    dialect: str,
    archived: bool,
    scope: bool,
    conversation: bool,
    key: bool,
    after: bool,
    event_after: bool = False,
    event_before: bool = False,
    as_of: bool = False,
) -> Statement:
    """The listing statement for one combination of filters."""
    memory_id = bytewise(dialect, _c.memory_id)
    statement = select(*rows.MEMORY_COLUMNS, _ENABLED).select_from(_FROM)
    statement = statement.where(_c.user_id == bindparam("user_id"))
    if as_of:
        statement = statement.where(timeline.validity_contains(bindparam("as_of")))
    elif not archived:
        statement = statement.where(_c.archived_at.is_(None))
    if scope:
        statement = statement.where(_c.scope == bindparam("scope"))
    if conversation:
        statement = statement.where(_c.conversation_id == bindparam("conversation_id"))
    if key:
        statement = statement.where(_c.key == bindparam("key"))
    if event_after:
        statement = statement.where(_c.event_at >= bindparam("event_after"))
    if event_before:
        statement = statement.where(_c.event_at < bindparam("event_before"))
    if after:
        statement = statement.where(
            tuple_(_c.created_at, memory_id)
            < tuple_(bindparam("after_created_at"), bindparam("after_memory_id"))
        )
    return Statement(
        statement.order_by(_c.created_at.desc(), memory_id.desc()).limit(bindparam("limit"))
    )


def list_page(conn: Connection, user_id: str, query: MemoryListQuery) -> Page[Memory]:
    """Newest first; keyset ``(created_at micros, memory_id)``. Raises
    ``MEMORY_DISABLED`` (the read gate)."""
    after: tuple[Any, ...] | None = query.after
    statement = _listing(
        conn.dialect.name,
        query.include_archived,
        query.scope is not None,
        query.conversation_id is not None,
        query.key is not None,
        after is not None,
        query.event_after is not None,
        query.event_before is not None,
        query.as_of is not None,
    )
    found = statement.all(
        conn,
        user_id=user_id,
        scope=None if query.scope is None else query.scope.value,
        conversation_id=query.conversation_id,
        key=query.key,
        event_after=None if query.event_after is None else to_micros(query.event_after),
        event_before=None if query.event_before is None else to_micros(query.event_before),
        as_of=None if query.as_of is None else to_micros(query.as_of),
        after_created_at=None if after is None else int(after[0]),
        after_memory_id=None if after is None else str(after[1]),
        limit=query.limit + 1,
    )
    if not found:
        check_read_gate(conn, user_id)
    else:
        _gate(user_id, found[0].memory_enabled)
    return paging.page(found, query.limit, rows.memory, lambda r: (r.created_at, r.memory_id))
