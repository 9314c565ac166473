"""Export records: domain objects -> ``ExportRecord`` (one oneof member each).

The records are the API's own resources, as the Get/List RPCs show them,
with two additions an import needs: ``Memory.embedding`` (and a candidate's
``memory.embedding``) carries the stored vector, and compaction checkpoints
and memory versions get records of their own (``CompactionCheckpoint``,
``memory_version``).
"""

from __future__ import annotations

from mnemo.v1 import conversations_pb2, memories_pb2
from mnemo.v1 import governance_pb2 as pb
from mnemo_server.api import convert, names
from mnemo_server.api.checkpoints.convert import checkpoint_to_proto
from mnemo_server.api.conversations import convert as conversation_convert
from mnemo_server.api.documents.convert import document_to_proto
from mnemo_server.api.governance.convert import (
    consent_to_proto,
    event_to_proto,
    settings_to_proto,
)
from mnemo_server.api.memories.convert import (
    candidate_to_proto,
    memory_to_proto,
    tombstone_to_proto,
)
from mnemo_server.api.working_memory import convert as working_memory_convert
from mnemo_server.domain.checkpoints import StoredCheckpoint
from mnemo_server.domain.compaction import encode_revision
from mnemo_server.domain.documents import Document
from mnemo_server.domain.governance import Consent, Event, MemorySettings
from mnemo_server.domain.memory_models import Embedding, Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import Conversation, ConversationKey
from mnemo_server.domain.user_data import (
    CompactionCheckpoint,
    ConversationFailedRun,
    ConversationMessage,
    ConversationState,
    ExportItem,
    MemoryVersion,
)

__all__ = ["RECORD_KINDS", "record_kind", "record_of"]

RECORD_KINDS: tuple[str, ...] = tuple(
    field.name for field in pb.ExportRecord.DESCRIPTOR.oneofs_by_name["record"].fields
)
"""The record kinds: the names of ``ExportRecord``'s oneof members."""


def record_kind(record: pb.ExportRecord) -> str:
    """The kind of ``record`` (``""`` when it holds none)."""
    return record.WhichOneof("record") or ""


def _embedding(value: Embedding) -> memories_pb2.Embedding:
    return memories_pb2.Embedding(model=value.model, values=value.values)


def _checkpoint(user_id: str, value: CompactionCheckpoint) -> pb.CompactionCheckpoint:
    key = ConversationKey(user_id, value.conversation_id)
    return pb.CompactionCheckpoint(
        conversation=names.conversation_name(key),
        revision=encode_revision(value.generation, value.sequence),
        covered=value.covered,
        replacement=[
            conversations_pb2.HistoryMessage(
                role=m.role, message_json=m.message_json, text=m.text, compacted=True
            )
            for m in value.replacement
        ],
        run_id=value.run_id,
        create_time=convert.timestamp(value.create_time),
    )


def record_of(user_id: str, item: ExportItem) -> pb.ExportRecord:
    """``item`` of ``user_id`` as an export record. Raises ``TypeError`` for
    an object that is no record."""
    match item:
        case Consent():
            return pb.ExportRecord(consent=consent_to_proto(item))
        case MemorySettings():
            return pb.ExportRecord(memory_settings=settings_to_proto(item))
        case Conversation():
            return pb.ExportRecord(conversation=conversation_convert.conversation_to_proto(item))
        case ConversationState(conversation_id, state):
            key = ConversationKey(user_id, conversation_id)
            return pb.ExportRecord(
                memory_state=working_memory_convert.memory_state_to_proto(key, state)
            )
        case ConversationMessage(conversation_id, message):
            key = ConversationKey(user_id, conversation_id)
            return pb.ExportRecord(message=conversation_convert.message_to_proto(key, message))
        case CompactionCheckpoint():
            return pb.ExportRecord(compaction_checkpoint=_checkpoint(user_id, item))
        case ConversationFailedRun(conversation_id, run):
            key = ConversationKey(user_id, conversation_id)
            return pb.ExportRecord(failed_run=conversation_convert.failed_run_to_proto(key, run))
        case Memory():
            memory = memory_to_proto(item)
            if item.embedding is not None:
                memory.embedding.CopyFrom(_embedding(item.embedding))
            return pb.ExportRecord(memory=memory)
        case MemoryVersion(_, memory):
            return pb.ExportRecord(memory_version=memory_to_proto(memory))
        case MemoryTombstone():
            return pb.ExportRecord(tombstone=tombstone_to_proto(item))
        case MemoryCandidate():
            candidate = candidate_to_proto(item)
            if item.draft.embedding is not None:
                candidate.memory.embedding.CopyFrom(_embedding(item.draft.embedding))
            return pb.ExportRecord(candidate=candidate)
        case Event():
            return pb.ExportRecord(event=event_to_proto(item))
        case Document():
            return pb.ExportRecord(document=document_to_proto(item, with_index=True))
        case StoredCheckpoint():
            return pb.ExportRecord(checkpoint=checkpoint_to_proto(user_id, item))
    raise TypeError(f"not an export record: {type(item).__name__}")
