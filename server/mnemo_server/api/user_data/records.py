"""One ``ExportRecord`` of an import -> a validated domain record.

Each function checks one record kind on the caller's ``Validator`` (field
paths under the caller's ``prefix``, ``records[i].<kind>``) and returns the
domain record; the caller raises before using a record with problems. Every
name must be one of the importing user's (``users/{user}/...``). What the
import keeps is read (ids, positions, times, etags, vectors); what the
server derives is derived again (a message's role and text from its JSON,
a conversation's message count, an entry's version number) and the
record's value is ignored. The size limits are those of the RPCs that
write the same data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf.message import Message

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import governance_pb2 as pb
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.api import convert, names
from mnemo_server.api.conversations.rules import revision_of
from mnemo_server.api.governance.convert import EVENT_TYPES
from mnemo_server.api.governance.requests import (
    CONSENT_PATTERN,
    SETTINGS_PATTERN,
    consent_state_of,
    consent_user,
    settings_user,
)
from mnemo_server.api.memories.convert import CANDIDATE_STATES
from mnemo_server.api.memories.requests import (
    conversation_of,
    draft_of,
    parse_candidate,
    parse_memory,
)
from mnemo_server.api.user_data.rules import RECORD_RULES
from mnemo_server.api.validation import MAX_TEXT_BYTES, Validator, check_fields, messages_of
from mnemo_server.config import Settings
from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.domain.governance import Consent, Event, EventType, MemorySettings
from mnemo_server.domain.memory_models import (
    CandidateState,
    Memory,
    MemoryCandidate,
    MemoryTombstone,
)
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    Exchange,
    FailedRun,
    MemoryState,
    NewMessage,
    RunError,
    StoredMessage,
)
from mnemo_server.domain.user_data import (
    CompactionCheckpoint,
    ConversationFailedRun,
    ConversationMessage,
    ConversationState,
    MemoryVersion,
)

T = TypeVar("T")

MAX_STORED_INT = 2**31 - 1
"""The largest generation or sequence the schema stores (``Integer`` columns)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MESSAGE = re.compile(
    rf"users/({names.ID_PATTERN})/conversations/({names.ID_PATTERN})/messages/(0|[1-9][0-9]{{0,9}})"
)
_FAILED_RUN = re.compile(
    rf"users/({names.ID_PATTERN})/conversations/({names.ID_PATTERN})/failedRuns/({names.ID_PATTERN})"
)
MESSAGE_PATTERN = "users/{user}/conversations/{conversation}/messages/{position}"
FAILED_RUN_PATTERN = "users/{user}/conversations/{conversation}/failedRuns/{failed_run}"


# ----------------------------------------------------------------- helpers


def _own(
    v: Validator,
    value: str,
    field: str,
    user_id: str,
    parse: Callable[[str, str], T],
    expected: str,
) -> T | None:
    """``parse(value, field)`` if ``value`` names a resource of ``user_id``;
    else an ``INVALID_NAME`` and ``None``. (The records' user is the
    import's parent, which the servicer authorized: the parsers here check
    the form of a name only, with no call scope.)"""
    if value != names.user_name(user_id) and not value.startswith(f"users/{user_id}/"):
        v.add(names.invalid_name(value, field, expected.replace("{user}", user_id, 1)))
        return None
    return v.attempt(lambda: parse(value, field), None)


def _time(v: Validator, holder: Message, name: str, prefix: str) -> datetime:
    """A required timestamp field of ``holder`` (the epoch after a problem)."""
    field = f"{prefix}.{name}"
    if not holder.HasField(name):
        v.invalid(field, "is required")
        return _EPOCH
    return _valid_time(v, getattr(holder, name), field)


def _optional_time(v: Validator, holder: Message, name: str, prefix: str) -> datetime | None:
    if not holder.HasField(name):
        return None
    return _valid_time(v, getattr(holder, name), f"{prefix}.{name}")


def _valid_time(v: Validator, value: Any, field: str) -> datetime:
    check = Validator()
    check.timestamp(value, field)
    try:
        check.raise_if_invalid()
    except InvalidArgument as error:
        v.add(error)
        return _EPOCH
    return convert.from_timestamp(value)


_NO_MESSAGE = NewMessage("", "", "")


def _messages(
    v: Validator, values: Sequence[cv.HistoryMessage], field: str, settings: Settings
) -> tuple[NewMessage, ...]:
    return tuple(messages_of(v, values, field, settings))


def _conversation_name(value: str, field: str) -> ConversationKey:
    return names.parse_conversation(value, field, None)


def _memory_state_name(value: str, field: str) -> ConversationKey:
    return names.parse_memory_state(value, field, None)


def _memory_name(value: str, field: str) -> tuple[str, str]:
    return parse_memory(value, field, None)


def _candidate_name(value: str, field: str) -> tuple[str, str]:
    return parse_candidate(value, field, None)


def _consent_name(value: str, field: str) -> str:
    return consent_user(value, field, None)


def _settings_name(value: str, field: str) -> str:
    return settings_user(value, field, None)


# ----------------------------------------------------------- conversations


def conversation(v: Validator, user_id: str, value: cv.Conversation, prefix: str) -> Conversation:
    """``message_count`` is derived from the imported messages."""
    key = _own(
        v,
        value.name,
        f"{prefix}.name",
        user_id,
        _conversation_name,
        names.CONVERSATION_PATTERN,
    )
    metadata = convert.metadata_from_struct(value.metadata)
    v.metadata(metadata, f"{prefix}.metadata")
    check_fields(v, value, RECORD_RULES, prefix)
    return Conversation(
        user_id=user_id,
        conversation_id="" if key is None else key.conversation_id,
        metadata=metadata,
        temporary=value.temporary,
        create_time=_time(v, value, "create_time", prefix),
        update_time=_time(v, value, "update_time", prefix),
        etag=value.etag,
        expire_time=_optional_time(v, value, "expire_time", prefix),
    )


def memory_state(
    v: Validator, user_id: str, value: wm.MemoryState, prefix: str
) -> ConversationState:
    key = _own(
        v,
        value.name,
        f"{prefix}.name",
        user_id,
        _memory_state_name,
        names.MEMORY_STATE_PATTERN,
    )
    check_fields(v, value, RECORD_RULES, prefix)
    recent = []
    for i, exchange in enumerate(value.recent):
        at = _time(v, exchange, "at", f"{prefix}.recent[{i}]")
        recent.append(Exchange(exchange.ask, exchange.answer, at))
    state = MemoryState(
        summary=value.summary,
        recent=tuple(recent),
        etag=value.etag,
        update_time=_time(v, value, "update_time", prefix),
    )
    return ConversationState("" if key is None else key.conversation_id, state)


def _message_name(value: str, field: str) -> tuple[ConversationKey, int]:
    user_id, conversation_id, position = names.owned_ids(
        value, field, _MESSAGE, MESSAGE_PATTERN, None
    )
    return ConversationKey(user_id, conversation_id), int(position)


def message(
    v: Validator, user_id: str, value: cv.HistoryMessage, prefix: str, settings: Settings
) -> ConversationMessage:
    """``role`` and ``text`` are derived from ``message_json``."""
    named = _own(v, value.name, f"{prefix}.name", user_id, _message_name, MESSAGE_PATTERN)
    if named is not None and named[1] != value.position:
        v.invalid(f"{prefix}.position", f"must be the position in the name ({named[1]})")
    field = f"{prefix}.message_json"
    new = v.message(value.message_json, field, settings.max_message_bytes) or _NO_MESSAGE
    check_fields(v, value, RECORD_RULES, prefix)
    stored = StoredMessage(
        position=value.position,
        run_id=value.run_id,
        turn=value.turn,
        create_time=_time(v, value, "create_time", prefix),
        role=new.role,
        message_json=new.message_json,
        text=new.text,
        event_time=_optional_time(v, value, "event_time", prefix),
    )
    return ConversationMessage("" if named is None else named[0].conversation_id, stored)


def checkpoint(
    v: Validator, user_id: str, value: pb.CompactionCheckpoint, prefix: str, settings: Settings
) -> CompactionCheckpoint:
    key = _own(
        v,
        value.conversation,
        f"{prefix}.conversation",
        user_id,
        _conversation_name,
        names.CONVERSATION_PATTERN,
    )
    field = f"{prefix}.revision"
    generation, sequence = revision_of(v, value.revision, field) or (1, 1)
    if not (1 <= generation <= MAX_STORED_INT and 0 <= sequence <= MAX_STORED_INT):
        v.invalid(field, "is not a revision of a compaction checkpoint")
    check_fields(v, value, RECORD_RULES, prefix)
    replacement = _messages(v, value.replacement, f"{prefix}.replacement", settings)
    marker = sequence == 0
    if marker and (value.covered or value.replacement or value.run_id):
        v.invalid(prefix, "a record of revision sequence 0 covers nothing and has no replacement")
    if not marker and not value.replacement:
        v.invalid(f"{prefix}.replacement", "needs at least 1 message")
    return CompactionCheckpoint(
        conversation_id="" if key is None else key.conversation_id,
        generation=generation,
        sequence=sequence,
        covered=value.covered,
        replacement=replacement,
        run_id=value.run_id,
        create_time=None if marker else _time(v, value, "create_time", prefix),
    )


def _failed_run_name(value: str, field: str) -> tuple[ConversationKey, str]:
    user_id, conversation_id, failed_run_id = names.owned_ids(
        value, field, _FAILED_RUN, FAILED_RUN_PATTERN, None
    )
    return ConversationKey(user_id, conversation_id), failed_run_id


def failed_run(
    v: Validator, user_id: str, value: cv.FailedRun, prefix: str, settings: Settings
) -> ConversationFailedRun:
    named = _own(v, value.name, f"{prefix}.name", user_id, _failed_run_name, FAILED_RUN_PATTERN)
    check_fields(v, value, RECORD_RULES, prefix)
    error = value.error
    partial = _messages(v, value.messages, f"{prefix}.messages", settings)
    create_time = _time(v, value, "create_time", prefix)
    run = FailedRun(
        failed_run_id="" if named is None else named[1],
        run_id=value.run_id,
        error=RunError(error.message, error.code, error.details_json),
        messages=tuple(
            StoredMessage(i, value.run_id, 0, create_time, m.role, m.message_json, m.text)
            for i, m in enumerate(partial)
        ),
        create_time=create_time,
    )
    return ConversationFailedRun("" if named is None else named[0].conversation_id, run)


# ----------------------------------------------------------------- memories


def memory(v: Validator, user_id: str, value: mm.Memory, prefix: str) -> Memory:
    """An entry (archived or not) with its stored vector, if any."""
    _, memory_id = _own(
        v, value.name, f"{prefix}.name", user_id, _memory_name, "users/{user}/memories/{memory}"
    ) or ("", "")
    draft = draft_of(v, value, prefix, user_id, None)
    check_fields(v, value, RECORD_RULES, prefix)
    return Memory(
        memory_id=memory_id,
        user_id=user_id,
        text=draft.text,
        create_time=_time(v, value, "create_time", prefix),
        update_time=_time(v, value, "update_time", prefix),
        key=draft.key,
        scope=draft.scope,
        conversation_id=draft.conversation_id,
        source=draft.source,
        metadata=draft.metadata,
        pinned=draft.pinned,
        archive_time=_optional_time(v, value, "archive_time", prefix),
        etag=value.etag,
        embedding=draft.embedding,
        event_time=draft.event_time,
    )


def memory_version(v: Validator, user_id: str, value: mm.Memory, prefix: str) -> MemoryVersion:
    """The version number is its place among the entry's versions."""
    entry = memory(v, user_id, value, prefix)
    if not value.HasField("archive_time"):
        v.invalid(f"{prefix}.archive_time", "is required (when an update replaced the version)")
    return MemoryVersion(0, entry)


def tombstone(
    v: Validator, user_id: str, value: mm.MemoryTombstone, prefix: str
) -> MemoryTombstone:
    _, memory_id = _own(
        v, value.name, f"{prefix}.name", user_id, _memory_name, "users/{user}/memories/{memory}"
    ) or ("", "")
    check_fields(v, value, RECORD_RULES, prefix)
    return MemoryTombstone(user_id, memory_id, value.key, _time(v, value, "delete_time", prefix))


def candidate(
    v: Validator, user_id: str, value: mm.MemoryCandidate, prefix: str
) -> MemoryCandidate:
    """An approved candidate whose entry was deleted has a blank text
    (``sql_memory_erase``); every other needs a valid entry."""
    _, candidate_id = _own(
        v,
        value.name,
        f"{prefix}.name",
        user_id,
        _candidate_name,
        "users/{user}/memoryCandidates/{candidate}",
    ) or ("", "")
    state = next((s for s, number in CANDIDATE_STATES.items() if number == value.state), None)
    if state is None:
        v.invalid(f"{prefix}.state", f"must be a candidate state (got {value.state})")
    blanked = state is CandidateState.APPROVED and not value.memory.text
    checked = mm.Memory()
    checked.CopyFrom(value.memory)
    if blanked:
        checked.text = "-"  # stands in for the erased text, which is not checked
    draft = draft_of(v, checked, f"{prefix}.memory", user_id, None)
    if blanked:
        draft = replace(draft, text="")
    saved = ""
    if value.saved_memory:
        _, saved = _own(
            v,
            value.saved_memory,
            f"{prefix}.saved_memory",
            user_id,
            _memory_name,
            "users/{user}/memories/{memory}",
        ) or ("", "")
    check_fields(v, value, RECORD_RULES, prefix)
    return MemoryCandidate(
        candidate_id=candidate_id,
        user_id=user_id,
        draft=draft,
        state=state or CandidateState.PENDING,
        create_time=_time(v, value, "create_time", prefix),
        conversation_id=conversation_of(
            v, value.conversation, f"{prefix}.conversation", user_id, None
        )
        or "",
        run_id=value.run_id,
        turn=value.turn,
        extractor=value.extractor,
        saved_memory_id=saved,
    )


# --------------------------------------------------------------- governance

_EVENT = re.compile(rf"users/({names.ID_PATTERN})/events/({names.ID_PATTERN})")
EVENT_PATTERN = "users/{user}/events/{event}"
MAX_EVENT_ATTRIBUTES = 64


def consent(v: Validator, user_id: str, value: pb.Consent, prefix: str) -> Consent:
    _own(v, value.name, f"{prefix}.name", user_id, _consent_name, CONSENT_PATTERN)
    state = consent_state_of(v, value.state, f"{prefix}.state")
    check_fields(v, value, RECORD_RULES, prefix)
    return Consent(user_id, state, value.policy_version, _time(v, value, "update_time", prefix))


def memory_settings(
    v: Validator, user_id: str, value: pb.MemorySettings, prefix: str
) -> MemorySettings:
    _own(v, value.name, f"{prefix}.name", user_id, _settings_name, SETTINGS_PATTERN)
    check_fields(v, value, RECORD_RULES, prefix)
    update_time = _time(v, value, "update_time", prefix)
    return MemorySettings(user_id, value.enabled, value.etag, update_time)


def _event_name(value: str, field: str) -> str:
    return names.owned_ids(value, field, _EVENT, EVENT_PATTERN, None)[1]


def event(v: Validator, user_id: str, value: pb.Event, prefix: str) -> Event:
    """``tenant`` is not read: an imported event is of the user's tenant."""
    event_id = _own(v, value.name, f"{prefix}.name", user_id, _event_name, EVENT_PATTERN)
    event_type = next((t for t, number in EVENT_TYPES.items() if number == value.type), None)
    if event_type is None:
        v.invalid(f"{prefix}.type", f"must be an event type (got {value.type})")
    v.max_items(len(value.attributes), f"{prefix}.attributes", MAX_EVENT_ATTRIBUTES)
    for key, text in value.attributes.items():
        v.text(key, f"{prefix}.attributes", MAX_TEXT_BYTES, required=True)
        v.text(text, f"{prefix}.attributes[{key[:64]!r}]", MAX_TEXT_BYTES)
    return Event(
        user_id=user_id,
        tenant_id="",
        event_id=event_id or "",
        type=event_type or EventType.MEMORY_SAVED,
        attributes=dict(value.attributes),
        create_time=_time(v, value, "create_time", prefix),
    )
