"""Rows to domain objects, times, etags and resource names for the SQL store."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo_server.domain import codec, names
from mnemo_server.domain.clock import now_micros as now_micros
from mnemo_server.domain.errors import NotFound, etag_mismatch
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    Exchange,
    FailedRun,
    JsonObject,
    MemoryState,
    NewMessage,
    RunError,
    StoredMessage,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(micros: int) -> datetime:
    """Stored microseconds as an aware UTC datetime (exact)."""
    return _EPOCH + timedelta(microseconds=micros)


def to_micros(value: datetime) -> int:
    """An aware datetime as stored microseconds (exact)."""
    return (value - _EPOCH) // timedelta(microseconds=1)


def new_etag() -> str:
    """A fresh opaque etag: 16 random hex characters, never reused."""
    return secrets.token_hex(8)


def new_failed_run_id() -> str:
    return secrets.token_hex(8)


def metadata_json(metadata: JsonObject) -> str:
    """Conversation metadata as stored (compact JSON)."""
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ------------------------------------------------------------------- names


def conversation_name(user_id: str, conversation_id: str) -> str:
    return names.conversation_name(ConversationKey(user_id, conversation_id))


def check_etag(expected_etag: str | None, current_etag: str, name: str) -> None:
    """Raise ``Aborted(ETAG_MISMATCH)`` naming ``name`` if ``expected_etag``
    is set (``None``: unconditional) and is not ``current_etag``."""
    if expected_etag is not None and expected_etag != current_etag:
        raise etag_mismatch(name)


def conversation_not_found(user_id: str, conversation_id: str) -> NotFound:
    name = conversation_name(user_id, conversation_id)
    return NotFound(f"{name} does not exist", metadata={"name": name}, reason="NOT_FOUND")


# -------------------------------------------------------------------- rows


def conversation(row: Any) -> Conversation:
    """A ``conversations`` row (any row with its column names as attributes)."""
    return Conversation(
        user_id=row.user_id,
        conversation_id=row.conversation_id,
        metadata=json.loads(row.metadata_json),
        temporary=bool(row.temporary),
        create_time=to_datetime(row.created_at),
        update_time=to_datetime(row.updated_at),
        message_count=row.message_count,
        etag=row.etag,
        expire_time=None if row.expire_at is None else to_datetime(row.expire_at),
    )


def stored_message_of(
    position: int,
    run_id: str,
    turn: int,
    created_at: int,
    role: str,
    message_json: str,
    text: str,
    event_at: int | None,
) -> StoredMessage:
    """A message from its ``messages`` columns (in this order)."""
    return StoredMessage(
        position,
        run_id,
        turn,
        _EPOCH + timedelta(microseconds=created_at),
        role,
        message_json,
        text,
        event_time=None if event_at is None else _EPOCH + timedelta(microseconds=event_at),
    )


def stored_message(row: Any) -> StoredMessage:
    """A ``messages`` row."""
    return StoredMessage(
        position=row.position,
        run_id=row.run_id,
        turn=row.turn,
        create_time=to_datetime(row.created_at),
        role=row.role,
        message_json=row.message_json,
        text=row.text,
        event_time=None if row.event_at is None else to_datetime(row.event_at),
    )


def memory_state(row: Any | None) -> MemoryState:
    """A ``working_memory`` row as a state (``summary``, ``recent_json``,
    ``etag``, ``updated_at``); ``None`` is the never-written state."""
    if row is None:
        return MemoryState()
    return MemoryState(
        summary=row.summary,
        recent=codec.loads(tuple[Exchange, ...], row.recent_json),
        etag=row.etag,
        update_time=to_datetime(row.updated_at),
    )


def new_messages(text: str) -> tuple[NewMessage, ...]:
    """A stored JSON array of messages (failed runs, checkpoints)."""
    return codec.loads(tuple[NewMessage, ...], text)


def unpositioned(
    items: tuple[NewMessage, ...], *, run_id: str, created_at: int, compacted: bool
) -> tuple[StoredMessage, ...]:
    """Messages kept outside the canonical history: a failed run's partial
    messages (positions 0.. within the run) or a compaction replacement
    (position -1, ``compacted``)."""
    create_time = to_datetime(created_at)
    return tuple(
        StoredMessage(
            position=-1 if compacted else index,
            run_id=run_id,
            turn=0,
            create_time=create_time,
            role=message.role,
            message_json=message.message_json,
            text=message.text,
            compacted=compacted,
        )
        for index, message in enumerate(items)
    )


def failed_run(row: Any) -> FailedRun:
    """A ``failed_runs`` row."""
    return FailedRun(
        failed_run_id=row.failed_run_id,
        run_id=row.run_id,
        error=RunError(
            message=row.error_message,
            code=row.error_code,
            details_json=row.error_details_json,
        ),
        messages=unpositioned(
            new_messages(row.messages_json),
            run_id=row.run_id,
            created_at=row.created_at,
            compacted=False,
        ),
        create_time=to_datetime(row.created_at),
    )
