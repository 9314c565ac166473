"""Reads of memory entries: one entry, and the newest-first listing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, tuple_

from mnemo_server.domain.memory_models import Memory, MemoryListQuery
from mnemo_server.domain.models import Page
from mnemo_server.store import memory_convert as rows
from mnemo_server.store import memory_text_index as fts
from mnemo_server.store.schema import memories
from mnemo_server.store.sql_memories import entry


def get(conn: Connection, user_id: str, memory_id: str) -> Memory:
    """Archived or not, with its vector. Raises ``NotFound``."""
    found = entry(conn, user_id, memories.c.memory_id == memory_id)
    if found is None:
        raise rows.memory_not_found(user_id, memory_id)
    return found


def list_page(conn: Connection, user_id: str, query: MemoryListQuery) -> Page[Memory]:
    """Newest first; keyset ``(created_at micros, memory_id)``."""
    memory_id = fts.by_id(conn, memories.c.memory_id)
    statement = (
        select(*rows.MEMORY_COLUMNS)
        .select_from(rows.MEMORY_FROM)
        .where(memories.c.user_id == user_id)
    )
    if not query.include_archived:
        statement = statement.where(memories.c.archived_at.is_(None))
    if query.scope is not None:
        statement = statement.where(memories.c.scope == query.scope.value)
    if query.conversation_id is not None:
        statement = statement.where(memories.c.conversation_id == query.conversation_id)
    if query.key is not None:
        statement = statement.where(memories.c.key == query.key)
    if query.after is not None:
        after: tuple[Any, ...] = query.after
        statement = statement.where(
            tuple_(memories.c.created_at, memory_id) < tuple_(int(after[0]), str(after[1]))
        )
    found = conn.execute(
        statement.order_by(memories.c.created_at.desc(), memory_id.desc()).limit(query.limit + 1)
    ).all()
    return rows.page(found, query.limit, rows.memory, lambda r: (r.created_at, r.memory_id))
