"""Conversation rows: locking, implicit creation, and the conversation CRUD
units of work (each a function of a ``Connection``, run by ``Database``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, delete, select, tuple_, update

from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.errors import AlreadyExists, etag_mismatch
from mnemo_server.domain.models import Conversation, JsonObject, Keyset, Page
from mnemo_server.store import convert, sql_changes
from mnemo_server.store.dialect import insert_ignoring_conflicts
from mnemo_server.store.schema import conversations
from mnemo_server.store.sql_temporary import drop_expired, unexpired
from mnemo_server.store.sql_users import ensure_user

ConversationRow = Row[Any]


def _where(user_id: str, conversation_id: str) -> tuple[Any, Any]:
    return conversations.c.user_id == user_id, conversations.c.conversation_id == conversation_id


def find(conn: Connection, user_id: str, conversation_id: str) -> ConversationRow | None:
    """The conversation row, unlocked (reads); an expired temporary one is none."""
    return conn.execute(
        select(conversations).where(
            *_where(user_id, conversation_id), unexpired(convert.now_micros())
        )
    ).one_or_none()


def lock(conn: Connection, user_id: str, conversation_id: str) -> ConversationRow | None:
    """The conversation row, locked until the transaction ends (``FOR UPDATE``
    on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already excludes every other
    writer). An expired temporary conversation is none."""
    return conn.execute(
        select(conversations)
        .where(*_where(user_id, conversation_id), unexpired(convert.now_micros()))
        .with_for_update()
    ).one_or_none()


def lock_existing(conn: Connection, user_id: str, conversation_id: str) -> ConversationRow:
    """``lock``, raising ``NotFound`` if there is no such conversation."""
    row = lock(conn, user_id, conversation_id)
    if row is None:
        raise convert.conversation_not_found(user_id, conversation_id)
    return row


def find_existing(conn: Connection, user_id: str, conversation_id: str) -> ConversationRow:
    """``find``, raising ``NotFound`` if there is no such conversation."""
    row = find(conn, user_id, conversation_id)
    if row is None:
        raise convert.conversation_not_found(user_id, conversation_id)
    return row


def check_etag(row: ConversationRow, expected_etag: str | None) -> None:
    """Raise ``Aborted(ETAG_MISMATCH)`` if ``expected_etag`` is set and stale."""
    if expected_etag is not None and expected_etag != row.etag:
        raise etag_mismatch(convert.conversation_name(row.user_id, row.conversation_id))


def _insert(
    conn: Connection,
    user_id: str,
    conversation_id: str,
    *,
    metadata: JsonObject,
    temporary: bool,
    expire_at: int | None,
    now: int,
) -> ConversationRow | None:
    """Insert the conversation (and its user) unless it exists; the new row,
    or None if it existed. An expired temporary conversation of that id is
    deleted first."""
    ensure_user(conn, user_id, now)
    drop_expired(conn, user_id, conversation_id, now)
    return conn.execute(
        insert_ignoring_conflicts(conn, conversations)
        .values(
            user_id=user_id,
            conversation_id=conversation_id,
            metadata_json=convert.metadata_json(metadata),
            temporary=temporary,
            created_at=now,
            updated_at=now,
            expire_at=expire_at,
            message_count=0,
            generation=1,
            checkpoint_seq=0,
            etag=convert.new_etag(),
        )
        .returning(*conversations.c)
    ).one_or_none()


def lock_or_create(
    conn: Connection, user_id: str, conversation_id: str, *, metadata: JsonObject, now: int
) -> tuple[ConversationRow, bool]:
    """The locked conversation row, created (with its user) if missing, and
    whether this call created it.

    Two transactions creating the same conversation at once both succeed: the
    insert skips an existing key (waiting for a concurrent inserter), and the
    row is then read and locked.
    """
    row = lock(conn, user_id, conversation_id)
    if row is not None:
        return row, False
    inserted = _insert(
        conn,
        user_id,
        conversation_id,
        metadata=metadata,
        temporary=False,
        expire_at=None,
        now=now,
    )
    row = lock(conn, user_id, conversation_id)
    assert row is not None, "a conversation just inserted must exist"
    return row, inserted is not None


def created_changes(row: ConversationRow, created: bool) -> list[NewChange]:
    """The change of a conversation a write created implicitly (none for an
    existing one or the default conversation, which is no resource)."""
    if not created or row.conversation_id == "":
        return []
    return [sql_changes.conversation_upserted(convert.conversation(row))]


def touch(conn: Connection, row: ConversationRow, now: int, **changes: Any) -> ConversationRow:
    """Update the conversation with ``changes``, a new etag and update time."""
    return conn.execute(
        update(conversations)
        .where(conversations.c.id == row.id)
        .values(updated_at=now, etag=convert.new_etag(), **changes)
        .returning(*conversations.c)
    ).one()


# ------------------------------------------------------------- units of work


def create(
    conn: Connection,
    user_id: str,
    conversation_id: str,
    *,
    metadata: JsonObject,
    temporary: bool,
    ttl_micros: int | None,
) -> Conversation:
    """Raises ``AlreadyExists``."""
    now = convert.now_micros()
    expire_at = now + ttl_micros if temporary and ttl_micros is not None else None
    row = _insert(
        conn,
        user_id,
        conversation_id,
        metadata=metadata,
        temporary=temporary,
        expire_at=expire_at,
        now=now,
    )
    if row is None:
        name = convert.conversation_name(user_id, conversation_id)
        raise AlreadyExists(
            f"{name} already exists; choose another conversation id", metadata={"name": name}
        )
    created = convert.conversation(row)
    sql_changes.append(conn, user_id, [sql_changes.conversation_upserted(created)])
    return created


def get(conn: Connection, user_id: str, conversation_id: str) -> Conversation:
    """Raises ``NotFound``."""
    return convert.conversation(find_existing(conn, user_id, conversation_id))


def list_page(
    conn: Connection, user_id: str, limit: int, after: Keyset | None
) -> Page[Conversation]:
    """Most recently updated first; keyset ``(updated_at micros, conversation_id)``."""
    query = select(conversations).where(
        conversations.c.user_id == user_id,
        conversations.c.conversation_id != "",
        unexpired(convert.now_micros()),
    )
    if after is not None:
        updated_at, conversation_id = after
        query = query.where(
            tuple_(conversations.c.updated_at, conversations.c.conversation_id)
            < tuple_(int(updated_at), str(conversation_id))
        )
    rows = conn.execute(
        query.order_by(
            conversations.c.updated_at.desc(), conversations.c.conversation_id.desc()
        ).limit(limit + 1)
    ).all()
    items = tuple(convert.conversation(row) for row in rows[:limit])
    if len(rows) <= limit:
        return Page(items)
    last = rows[limit - 1]
    return Page(items, next_after=(last.updated_at, last.conversation_id))


def update_metadata(
    conn: Connection,
    user_id: str,
    conversation_id: str,
    metadata: JsonObject,
    expected_etag: str | None,
) -> Conversation:
    """Raises ``NotFound``, ``Aborted(ETAG_MISMATCH)``."""
    row = lock_existing(conn, user_id, conversation_id)
    check_etag(row, expected_etag)
    changed = touch(conn, row, convert.now_micros(), metadata_json=convert.metadata_json(metadata))
    updated = convert.conversation(changed)
    sql_changes.append(conn, user_id, [sql_changes.conversation_upserted(updated)])
    return updated


def remove(conn: Connection, user_id: str, conversation_id: str, expected_etag: str | None) -> None:
    """Delete with everything that hangs off it (``ON DELETE CASCADE``); the
    states of its earlier changes go too. Raises ``NotFound``,
    ``Aborted(ETAG_MISMATCH)``."""
    row = lock_existing(conn, user_id, conversation_id)
    check_etag(row, expected_etag)
    conn.execute(
        delete(conversations).where(
            conversations.c.id == row.id, conversations.c.user_id == user_id
        )
    )
    sql_changes.forget_conversation(conn, user_id, conversation_id)
    sql_changes.append(conn, user_id, [sql_changes.conversation_deleted(user_id, conversation_id)])
