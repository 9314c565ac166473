"""Long-term memory domain objects -> mnemo.v1 protos, and the enum mappings
both ways.

Pure functions. ``Memory.embedding`` is input only: vectors are never sent
back (they are large and only the server compares them).
"""

from __future__ import annotations

from typing import Any

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.api.convert import enum_mapping, set_timestamp, timestamp
from mnemo_server.domain.memory_models import (
    CandidateState,
    InjectContext,
    Memory,
    MemoryCandidate,
    MemoryDraft,
    MemoryScope,
    MemorySource,
    MemoryTombstone,
    RecallHit,
    RecallScope,
    RecallSignal,
    SaveOutcome,
)
from mnemo_server.domain.models import ConversationKey
from mnemo_server.domain.names import conversation_name, memory_candidate_name, memory_name

SCOPES: dict[MemoryScope, pb.MemoryScope] = enum_mapping(
    MemoryScope, pb.MemoryScope, "MEMORY_SCOPE_"
)
SOURCES: dict[MemorySource, pb.MemorySource] = enum_mapping(
    MemorySource, pb.MemorySource, "MEMORY_SOURCE_"
)
RECALL_SCOPES: dict[RecallScope, pb.RecallScope] = enum_mapping(
    RecallScope, pb.RecallScope, "RECALL_SCOPE_", ANY="RECALL_SCOPE_UNSPECIFIED"
)
SIGNALS: dict[RecallSignal, pb.RecallSignal] = enum_mapping(
    RecallSignal, pb.RecallSignal, "RECALL_SIGNAL_"
)
OUTCOMES: dict[SaveOutcome, pb.SaveOutcome] = enum_mapping(
    SaveOutcome, pb.SaveOutcome, "SAVE_OUTCOME_"
)
CANDIDATE_STATES: dict[CandidateState, pb.CandidateState] = enum_mapping(
    CandidateState, pb.CandidateState, "CANDIDATE_STATE_"
)


def _conversation(user_id: str, conversation_id: str) -> str:
    """The conversation's name, ``""`` for none."""
    if not conversation_id:
        return ""
    return conversation_name(ConversationKey(user_id, conversation_id))


def draft_to_proto(user_id: str, draft: MemoryDraft) -> pb.Memory:
    """The proposed entry of a candidate (no name, stored times or etag yet;
    its event time when the proposer knew it)."""
    made = pb.Memory(
        text=draft.text,
        key=draft.key,
        scope=SCOPES[draft.scope],
        conversation=_conversation(user_id, draft.conversation_id),
        source=SOURCES[draft.source],
        metadata=draft.metadata,
        pinned=draft.pinned,
    )
    if draft.event_time is not None:
        set_timestamp(made.event_time, draft.event_time)
    return made


def fill_memory(target: pb.Memory, value: Memory) -> None:
    """Set the fields of ``target`` (a new or a response's own ``Memory``, in
    place: building one and copying it into a response costs twice)."""
    target.name = memory_name(value.user_id, value.memory_id)
    target.text = value.text
    target.key = value.key
    target.scope = SCOPES[value.scope]
    target.conversation = _conversation(value.user_id, value.conversation_id)
    target.source = SOURCES[value.source]
    if value.metadata:
        target.metadata.update(value.metadata)
    target.pinned = value.pinned
    set_timestamp(target.create_time, value.create_time)
    set_timestamp(target.update_time, value.update_time)
    if value.archive_time is not None:
        set_timestamp(target.archive_time, value.archive_time)
    target.etag = value.etag
    if value.event_time is not None:
        set_timestamp(target.event_time, value.event_time)
    if value.valid_until is not None:
        set_timestamp(target.valid_until, value.valid_until)


def memory_to_proto(value: Memory) -> pb.Memory:
    made = pb.Memory()
    fill_memory(made, value)
    return made


def memories_to_proto(values: tuple[Memory, ...]) -> list[pb.Memory]:
    return [memory_to_proto(m) for m in values]


def add_memories(target: Any, values: tuple[Memory, ...]) -> None:
    """Add each entry to ``target``, a response's repeated ``Memory`` field."""
    for value in values:
        fill_memory(target.add(), value)


def tombstone_to_proto(value: MemoryTombstone) -> pb.MemoryTombstone:
    return pb.MemoryTombstone(
        name=memory_name(value.user_id, value.memory_id),
        key=value.key,
        delete_time=timestamp(value.delete_time),
    )


def candidate_to_proto(value: MemoryCandidate) -> pb.MemoryCandidate:
    user_id = value.user_id
    saved = value.saved_memory_id
    return pb.MemoryCandidate(
        name=memory_candidate_name(user_id, value.candidate_id),
        memory=draft_to_proto(user_id, value.draft),
        state=CANDIDATE_STATES[value.state],
        conversation=_conversation(user_id, value.conversation_id),
        run_id=value.run_id,
        turn=value.turn,
        extractor=value.extractor,
        create_time=timestamp(value.create_time),
        saved_memory=memory_name(user_id, saved) if saved else "",
    )


def candidates_to_proto(values: tuple[MemoryCandidate, ...]) -> list[pb.MemoryCandidate]:
    return [candidate_to_proto(c) for c in values]


def hit_to_proto(hit: RecallHit) -> pb.RecallMemoriesResponse:
    response = pb.RecallMemoriesResponse(
        score=hit.score, rank=hit.rank, signals=[SIGNALS[s] for s in hit.signals]
    )
    fill_memory(response.memory, hit.memory)
    return response


def context_to_proto(user_id: str, context: InjectContext) -> pb.BuildContextResponse:
    return pb.BuildContextResponse(
        system_message=context.system_message,
        memories=[memory_name(user_id, m) for m in context.memory_ids],
        used_bytes=context.used_bytes,
    )
