"""Rows to domain objects, times, etags and resource names for the SQL store."""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row

from mnemo_server.domain import codec, names
from mnemo_server.domain.errors import NotFound
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


def now_micros() -> int:
    """The current time in microseconds since the epoch (the stored form)."""
    return time.time_ns() // 1000


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


def conversation_not_found(user_id: str, conversation_id: str) -> NotFound:
    name = conversation_name(user_id, conversation_id)
    return NotFound(f"{name} does not exist", metadata={"name": name})


# -------------------------------------------------------------------- rows


def conversation(row: Row[Any]) -> Conversation:
    m = row._mapping
    return Conversation(
        user_id=m["user_id"],
        conversation_id=m["conversation_id"],
        metadata=json.loads(m["metadata_json"]),
        temporary=bool(m["temporary"]),
        create_time=to_datetime(m["created_at"]),
        update_time=to_datetime(m["updated_at"]),
        message_count=m["message_count"],
        etag=m["etag"],
        expire_time=None if m["expire_at"] is None else to_datetime(m["expire_at"]),
    )


def stored_message(row: Row[Any]) -> StoredMessage:
    m = row._mapping
    return StoredMessage(
        position=m["position"],
        run_id=m["run_id"],
        turn=m["turn"],
        create_time=to_datetime(m["created_at"]),
        role=m["role"],
        message_json=m["message_json"],
        text=m["text"],
    )


def memory_state(row: Row[Any] | None) -> MemoryState:
    """A ``working_memory`` row as a state; ``None`` is the never-written state."""
    if row is None:
        return MemoryState()
    m = row._mapping
    return MemoryState(
        summary=m["summary"],
        recent=codec.loads(tuple[Exchange, ...], m["recent_json"]),
        etag=m["etag"],
        update_time=to_datetime(m["updated_at"]),
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


def failed_run(row: Row[Any]) -> FailedRun:
    m = row._mapping
    return FailedRun(
        failed_run_id=m["failed_run_id"],
        run_id=m["run_id"],
        error=RunError(
            message=m["error_message"],
            code=m["error_code"],
            details_json=m["error_details_json"],
        ),
        messages=unpositioned(
            new_messages(m["messages_json"]),
            run_id=m["run_id"],
            created_at=m["created_at"],
            compacted=False,
        ),
        create_time=to_datetime(m["created_at"]),
    )
