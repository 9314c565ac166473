"""Conversation domain objects <-> mnemo.v1 protos (conversations, history
messages, failed runs). Pure functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemo.v1 import conversations_pb2
from mnemo_server.api import names
from mnemo_server.api.convert import metadata_to_struct, set_timestamp, timestamp
from mnemo_server.domain import models


def conversation_to_proto(value: models.Conversation) -> conversations_pb2.Conversation:
    key = models.ConversationKey(value.user_id, value.conversation_id)
    return conversations_pb2.Conversation(
        name=names.conversation_name(key),
        metadata=metadata_to_struct(value.metadata),
        temporary=value.temporary,
        create_time=timestamp(value.create_time),
        update_time=timestamp(value.update_time),
        message_count=value.message_count,
        etag=value.etag,
        expire_time=timestamp(value.expire_time),
    )


def _fill_message(
    made: Callable[..., conversations_pb2.HistoryMessage],
    prefix: str,
    value: models.StoredMessage,
    canonical: bool,
) -> conversations_pb2.HistoryMessage:
    message = made(
        name=f"{prefix}{value.position}" if canonical and not value.compacted else "",
        position=value.position,
        run_id=value.run_id,
        turn=value.turn,
        role=value.role,
        message_json=value.message_json,
        text=value.text,
        compacted=value.compacted,
    )
    set_timestamp(message.create_time, value.create_time)
    set_timestamp(message.event_time, value.event_time or value.create_time)
    return message


def message_to_proto(
    key: models.ConversationKey, value: models.StoredMessage, *, canonical: bool = True
) -> conversations_pb2.HistoryMessage:
    """A message; only canonical history messages have a name (compaction
    replacements and a failed run's partial messages do not)."""
    return _fill_message(conversations_pb2.HistoryMessage, _messages_prefix(key), value, canonical)


def messages_to_proto(
    key: models.ConversationKey,
    values: tuple[models.StoredMessage, ...],
    *,
    canonical: bool = True,
) -> list[conversations_pb2.HistoryMessage]:
    """``message_to_proto`` of each."""
    prefix = _messages_prefix(key)
    made = conversations_pb2.HistoryMessage
    return [_fill_message(made, prefix, m, canonical) for m in values]


def add_messages(
    target: Any,
    key: models.ConversationKey,
    values: tuple[models.StoredMessage, ...],
    *,
    canonical: bool = True,
) -> None:
    """Add ``message_to_proto`` of each to ``target``, a response's repeated
    ``HistoryMessage`` field: built in place, where a list given to the
    response's constructor would be copied into it (a page: half the cost)."""
    prefix = _messages_prefix(key)
    for m in values:
        _fill_message(target.add, prefix, m, canonical)


def _messages_prefix(key: models.ConversationKey) -> str:
    return f"{names.conversation_name(key)}/messages/"


def failed_run_to_proto(
    key: models.ConversationKey, value: models.FailedRun
) -> conversations_pb2.FailedRun:
    return conversations_pb2.FailedRun(
        name=names.failed_run_name(key, value.failed_run_id),
        run_id=value.run_id,
        error=conversations_pb2.RunError(
            message=value.error.message,
            code=value.error.code,
            details_json=value.error.details_json,
        ),
        messages=messages_to_proto(key, value.messages, canonical=False),
        create_time=timestamp(value.create_time),
    )


def run_error_from_proto(value: conversations_pb2.RunError) -> models.RunError:
    return models.RunError(message=value.message, code=value.code, details_json=value.details_json)
