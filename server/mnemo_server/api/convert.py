"""Domain objects <-> mnemo.v1 protos, and timestamps/metadata between the two.

Pure functions; input protos are assumed validated (``api.validation``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from mnemo.v1 import conversations_pb2, working_memory_pb2
from mnemo_server.api import names
from mnemo_server.domain import models

E = TypeVar("E", bound=Enum)


def enum_mapping(domain: type[E], wire: Any, prefix: str, **renamed: str) -> dict[E, Any]:
    """Each member of the domain enum ``domain`` -> the value of the proto
    enum ``wire`` named ``prefix`` + the member's name (``renamed``: the wire
    names of members named otherwise). A member without a wire value fails at
    import, not in a call."""
    return {member: wire.Value(renamed.get(member.name, prefix + member.name)) for member in domain}


def expected_etag(etag: str) -> str | None:
    """A request's etag as a command's ``expected_etag``: empty on the wire
    means "unconditional" (``None``)."""
    return etag or None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def timestamp(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    """A datetime (naive means UTC) as a Timestamp (``None`` stays unset).
    Exact to the microsecond; computed here rather than by
    ``Timestamp.FromDatetime``, which costs several times as much."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    seconds, micros = divmod((value - _EPOCH) // _MICROSECOND, 1_000_000)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=micros * 1000)


def from_timestamp(value: timestamp_pb2.Timestamp) -> datetime:
    """A Timestamp as a UTC-aware datetime."""
    return value.ToDatetime(tzinfo=UTC)


def metadata_from_struct(value: struct_pb2.Struct) -> models.JsonObject:
    """A Struct as a plain JSON object (numbers become floats, as Struct holds them)."""
    result: models.JsonObject = json_format.MessageToDict(value)
    return result


def metadata_to_struct(value: models.JsonObject) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(value)
    return result


# ------------------------------------------------------------- working memory


def exchange_from_proto(value: working_memory_pb2.Exchange, now: datetime) -> models.Exchange:
    """``at`` unset -> ``now`` (the server stamps the time)."""
    at = from_timestamp(value.at) if value.HasField("at") else now
    return models.Exchange(ask=value.ask, answer=value.answer, at=at)


def add_exchanges(target: Any, values: tuple[models.Exchange, ...]) -> None:
    """Add each exchange to ``target``, a repeated ``Exchange`` field (in place)."""
    for value in values:
        set_timestamp(target.add(ask=value.ask, answer=value.answer).at, value.at)


def fill_memory_state(
    target: working_memory_pb2.MemoryState, key: models.ConversationKey, state: models.MemoryState
) -> None:
    """Set the fields of ``target`` (a response's own ``MemoryState``, in place)."""
    target.name = names.memory_state_name(key)
    target.summary = state.summary
    add_exchanges(target.recent, state.recent)
    target.etag = state.etag
    if state.update_time is not None:
        set_timestamp(target.update_time, state.update_time)


def memory_state_to_proto(
    key: models.ConversationKey, state: models.MemoryState
) -> working_memory_pb2.MemoryState:
    made = working_memory_pb2.MemoryState()
    fill_memory_state(made, key, state)
    return made


# ------------------------------------------------------------- conversations


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


def set_timestamp(target: timestamp_pb2.Timestamp, value: datetime) -> None:
    """Set ``target`` (a message's Timestamp field, in place) to ``value``
    (naive means UTC): ``timestamp`` without the copy into the field."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    seconds, micros = divmod((value - _EPOCH) // _MICROSECOND, 1_000_000)
    target.seconds = seconds
    target.nanos = micros * 1000


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
