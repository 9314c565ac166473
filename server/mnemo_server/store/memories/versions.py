"""The audit trail of a memory entry (``ListMemoryVersions``).

The trail of an entry is every entry of its (scope, conversation, key) chain
(just the entry itself when it has no key), each as it is now, plus the
earlier versions that updates replaced (``memory_versions``). An earlier
version is shown as the entry with that version's text, metadata, pinned
flag and etag, ``update_time`` when it was written and ``archive_time`` when
an update replaced it. Vectors are not part of the trail. Newest first:
``update_time`` descending, then ``memory_id`` descending, then version
descending, which is also the keyset ``(updated_at micros, memory_id,
version)``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, select, union_all

from mnemo_server.domain.memory_models import Memory
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.store import paging
from mnemo_server.store.engine import dialect
from mnemo_server.store.memories import rows
from mnemo_server.store.memories.writes import MemoryRow, existing_row
from mnemo_server.store.schema import memories, memory_versions

_ENTRY_COLUMNS = (
    memories.c.user_id,
    memories.c.memory_id,
    memories.c.key,
    memories.c.scope,
    memories.c.conversation_id,
    memories.c.source,
    memories.c.created_at,
    memories.c.event_at,
    memories.c.valid_until,
)


def _chain(row: MemoryRow) -> ColumnElement[bool]:
    if not row.key:
        same: ColumnElement[bool] = memories.c.id == row.id
        return same
    return and_(
        memories.c.scope == row.scope,
        memories.c.conversation_id == row.conversation_id,
        memories.c.key == row.key,
    )


def earlier_versions() -> Select[Any]:
    """Every earlier version (``memory_versions``) as a row that
    ``rows.memory`` reads: its entry with the version's text,
    metadata, pinned flag and etag, ``updated_at`` when the version was
    written and ``archived_at`` when an update replaced it (no vector)."""
    return select(
        *_ENTRY_COLUMNS,
        memory_versions.c.text,
        memory_versions.c.metadata_json,
        memory_versions.c.pinned,
        memory_versions.c.etag,
        memory_versions.c.updated_at,
        memory_versions.c.replaced_at.label("archived_at"),
        memory_versions.c.version,
    ).select_from(memory_versions.join(memories))


def list_versions(
    conn: Connection, user_id: str, memory_id: str, limit: int, after: Keyset | None
) -> Page[Memory]:
    """The trail of ``memory_id`` (see the module doc). Raises ``NotFound``."""
    row = existing_row(conn, user_id, memory_id)
    chain = and_(memories.c.user_id == user_id, _chain(row))
    current = select(
        *_ENTRY_COLUMNS,
        memories.c.text,
        memories.c.metadata_json,
        memories.c.pinned,
        memories.c.etag,
        memories.c.updated_at,
        memories.c.archived_at,
        memories.c.version,
    ).where(chain)
    earlier = earlier_versions().where(chain, memory_versions.c.user_id == user_id)
    trail = union_all(current, earlier).subquery()
    trail_id = dialect.by_id(conn, trail.c.memory_id)
    statement = paging.newest_first(
        select(trail),
        (trail.c.updated_at, trail_id, trail.c.version),
        paging.typed(after, (int, str, int)),
        limit,
    )
    return paging.read_page(
        conn, statement, limit, rows.memory, lambda r: (r.updated_at, r.memory_id, r.version)
    )
