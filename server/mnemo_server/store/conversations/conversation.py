"""Conversation rows: locking, implicit creation, and the conversation CRUD
units of work (``CreateConversation``, ``UpdateConversation``,
``DeleteConversation``) and reads."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, delete, or_, select, update

from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.conversations import (
    CreateConversation,
    DeleteConversation,
    UpdateConversation,
)
from mnemo_server.domain.errors import AlreadyExists
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import Conversation, JsonObject, Keyset, Page
from mnemo_server.store import paging
from mnemo_server.store import rows as convert
from mnemo_server.store.conversations.temporary import drop_expired, unexpired
from mnemo_server.store.engine.statements import Statement, insert_per_dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.schema import conversations
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit
from mnemo_server.store.users import ensure_user

ConversationRow = Any
"""A ``conversations`` row: its columns as attributes."""

_c = conversations.c
_KEY = (
    _c.user_id == bindparam("user_id"),
    _c.conversation_id == bindparam("conversation_id"),
    or_(_c.expire_at.is_(None), _c.expire_at > bindparam("now")),
)
_FIND = Statement(select(conversations).where(*_KEY))
# FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already excludes every
# other writer.
_LOCK = Statement(select(conversations).where(*_KEY).with_for_update())
_INSERT = insert_per_dialect(
    lambda insert: (
        insert(conversations)
        .values(
            user_id=bindparam("user_id"),
            conversation_id=bindparam("conversation_id"),
            metadata_json=bindparam("metadata_json"),
            temporary=bindparam("temporary"),
            created_at=bindparam("now"),
            updated_at=bindparam("now"),
            expire_at=bindparam("expire_at"),
            message_count=0,
            generation=1,
            checkpoint_seq=0,
            etag=bindparam("etag"),
        )
        .on_conflict_do_nothing()
        .returning(*conversations.c)
    )
)


def touch_with(**changes: Any) -> Statement:
    """``UPDATE`` of one conversation (by ``pk`` and ``user_id``) with
    ``changes``, a new etag and update time, returning the row."""
    return Statement(
        update(conversations)
        .where(_c.id == bindparam("pk"), _c.user_id == bindparam("user_id"))
        .values(updated_at=bindparam("now"), etag=bindparam("etag"), **changes)
        .returning(*conversations.c)
    )


_TOUCH_METADATA = touch_with(metadata_json=bindparam("metadata_json"))
_DELETE = Statement(
    delete(conversations).where(_c.id == bindparam("pk"), _c.user_id == bindparam("user_id"))
)


def find(conn: Connection | Tx, user_id: str, conversation_id: str) -> ConversationRow | None:
    """The conversation row, unlocked (reads); an expired temporary one is none."""
    return _FIND.first(
        conn, user_id=user_id, conversation_id=conversation_id, now=convert.now_micros()
    )


def lock(tx: Tx, user_id: str, conversation_id: str) -> ConversationRow | None:
    """The conversation row, locked until the transaction ends. An expired
    temporary conversation is none."""
    return _LOCK.first(
        tx, user_id=user_id, conversation_id=conversation_id, now=convert.now_micros()
    )


def lock_existing(tx: Tx, user_id: str, conversation_id: str) -> ConversationRow:
    """``lock``, raising ``NotFound`` if there is no such conversation."""
    row = lock(tx, user_id, conversation_id)
    if row is None:
        raise convert.conversation_not_found(user_id, conversation_id)
    return row


def find_existing(conn: Connection | Tx, user_id: str, conversation_id: str) -> ConversationRow:
    """``find``, raising ``NotFound`` if there is no such conversation."""
    row = find(conn, user_id, conversation_id)
    if row is None:
        raise convert.conversation_not_found(user_id, conversation_id)
    return row


def check_etag(row: ConversationRow, expected_etag: str | None) -> None:
    """Raise ``Aborted(ETAG_MISMATCH)`` if ``expected_etag`` is set and stale."""
    convert.check_etag(
        expected_etag, row.etag, convert.conversation_name(row.user_id, row.conversation_id)
    )


def _insert(
    tx: Tx,
    caller: Caller | None,
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
    ensure_user(tx, caller, user_id, now)
    drop_expired(tx, user_id, conversation_id, now)
    return _INSERT[tx.dialect].first(
        tx,
        user_id=user_id,
        conversation_id=conversation_id,
        metadata_json=convert.metadata_json(metadata),
        temporary=temporary,
        now=now,
        expire_at=expire_at,
        etag=convert.new_etag(),
    )


def lock_or_create(
    tx: Tx,
    caller: Caller | None,
    user_id: str,
    conversation_id: str,
    *,
    metadata: JsonObject,
    now: int,
) -> tuple[ConversationRow, bool]:
    """The locked conversation row, created (with its user) if missing, and
    whether this call created it.

    Two transactions creating the same conversation at once both succeed: the
    insert skips an existing key (waiting for a concurrent inserter), and the
    row is then read and locked.
    """
    row = lock(tx, user_id, conversation_id)
    if row is not None:
        return row, False
    return create_for_write(tx, caller, user_id, conversation_id, metadata=metadata, now=now)


def create_for_write(
    tx: Tx,
    caller: Caller | None,
    user_id: str,
    conversation_id: str,
    *,
    metadata: JsonObject,
    now: int,
) -> tuple[ConversationRow, bool]:
    """The conversation a write found missing, created (with its user) and
    locked, and whether this call created it (a concurrent writer may have
    created it meanwhile)."""
    inserted = _insert(
        tx,
        caller,
        user_id,
        conversation_id,
        metadata=metadata,
        temporary=False,
        expire_at=None,
        now=now,
    )
    row = lock(tx, user_id, conversation_id)
    assert row is not None, "a conversation just inserted must exist"
    return row, inserted is not None


def created_changes(row: ConversationRow, created: bool) -> list[NewChange]:
    """The change of a conversation a write created implicitly (none for an
    existing one or the default conversation, which is no resource)."""
    if not created or row.conversation_id == "":
        return []
    return [change_log.conversation_upserted(convert.conversation(row))]


# ------------------------------------------------------------- units of work


@unit(CreateConversation)
def create(tx: Tx, command: CreateConversation) -> Conversation:
    """Raises ``AlreadyExists``."""
    now = convert.now_micros()
    lifetime = command.lifetime_micros
    expire_at = now + lifetime if command.temporary and lifetime is not None else None
    row = _insert(
        tx,
        command.caller,
        command.user_id,
        command.conversation_id,
        metadata=command.metadata,
        temporary=command.temporary,
        expire_at=expire_at,
        now=now,
    )
    if row is None:
        name = convert.conversation_name(command.user_id, command.conversation_id)
        raise AlreadyExists(
            f"{name} already exists; choose another conversation id",
            metadata={"name": name},
            reason="ALREADY_EXISTS",
        )
    created = convert.conversation(row)
    change_log.append(tx, command.user_id, [change_log.conversation_upserted(created)])
    return created


@unit(UpdateConversation)
def update_metadata(tx: Tx, command: UpdateConversation) -> Conversation:
    """Raises ``NotFound``, ``Aborted(ETAG_MISMATCH)``."""
    row = lock_existing(tx, command.user_id, command.conversation_id)
    check_etag(row, command.expected_etag)
    changed = _TOUCH_METADATA.one(
        tx,
        pk=row.id,
        user_id=row.user_id,
        now=convert.now_micros(),
        etag=convert.new_etag(),
        metadata_json=convert.metadata_json(command.metadata),
    )
    updated = convert.conversation(changed)
    change_log.append(tx, command.user_id, [change_log.conversation_upserted(updated)])
    return updated


@unit(DeleteConversation)
def remove(tx: Tx, command: DeleteConversation) -> None:
    """Delete with everything that hangs off it (``ON DELETE CASCADE``); the
    states of its earlier changes go too. Raises ``NotFound``,
    ``Aborted(ETAG_MISMATCH)``."""
    user_id, conversation_id = command.user_id, command.conversation_id
    row = lock_existing(tx, user_id, conversation_id)
    check_etag(row, command.expected_etag)
    _DELETE.execute(tx, pk=row.id, user_id=user_id)
    change_log.forget_conversation(tx.conn, user_id, conversation_id)
    change_log.append(tx, user_id, [change_log.conversation_deleted(user_id, conversation_id)])


# ------------------------------------------------------------------- reads


def get(conn: Connection, user_id: str, conversation_id: str) -> Conversation:
    """Raises ``NotFound``."""
    return convert.conversation(find_existing(conn, user_id, conversation_id))


def list_page(
    conn: Connection, user_id: str, limit: int, after: Keyset | None
) -> Page[Conversation]:
    """Most recently updated first; keyset ``(updated_at micros, conversation_id)``."""
    query = paging.newest_first(
        select(conversations).where(
            _c.user_id == user_id,
            _c.conversation_id != "",
            unexpired(convert.now_micros()),
        ),
        (_c.updated_at, _c.conversation_id),
        paging.typed(after, (int, str)),
        limit,
    )
    return paging.read_page(
        conn, query, limit, convert.conversation, lambda row: (row.updated_at, row.conversation_id)
    )
