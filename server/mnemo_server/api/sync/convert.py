"""Domain changes (``domain.changes``) as ``mnemo.v1.Change`` messages, with
the converters of each resource (``api.<service>.convert``)."""

from __future__ import annotations

import re

from google.protobuf import timestamp_pb2

from mnemo.v1 import sync_pb2 as pb
from mnemo_server.api.checkpoints.convert import ref_to_proto
from mnemo_server.api.conversations.convert import (
    conversation_to_proto,
    failed_run_to_proto,
    message_to_proto,
)
from mnemo_server.api.convert import enum_mapping, timestamp
from mnemo_server.api.documents.convert import document_to_proto
from mnemo_server.api.governance.convert import consent_to_proto, settings_to_proto
from mnemo_server.api.memories.convert import (
    candidate_to_proto,
    memory_to_proto,
    tombstone_to_proto,
)
from mnemo_server.api.working_memory.convert import memory_state_to_proto
from mnemo_server.domain.change_watch import Heartbeat
from mnemo_server.domain.changes import Change, ChangeOperation
from mnemo_server.domain.checkpoints import CheckpointRef
from mnemo_server.domain.documents import Document
from mnemo_server.domain.governance import Consent, MemorySettings
from mnemo_server.domain.memory_models import Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    FailedRun,
    MemoryState,
    StoredMessage,
)

__all__ = ["change_to_proto", "changes_to_proto", "heartbeat_to_proto"]

OPERATIONS = enum_mapping(ChangeOperation, pb.ChangeOperation, "CHANGE_OPERATION_")

# The conversation a working memory, message or failed run belongs to, from
# its resource name (``domain.names``); a default working memory has none.
_CONVERSATION = re.compile(r"^users/[^/]+/conversations/([^/]+)/")


def _key(change: Change) -> ConversationKey:
    found = _CONVERSATION.match(change.resource_name)
    return ConversationKey(change.user_id, found.group(1) if found else "")


def change_to_proto(change: Change) -> pb.Change:
    """The change as sent by ListChanges and WatchChanges."""
    message = pb.Change(
        cursor=change.cursor,
        operation=OPERATIONS[change.operation],
        resource_name=change.resource_name,
        etag=change.etag,
        change_time=timestamp(change.change_time),
    )
    state = change.state
    if isinstance(state, MemoryState):
        message.memory_state.CopyFrom(memory_state_to_proto(_key(change), state))
    elif isinstance(state, Conversation):
        message.conversation.CopyFrom(conversation_to_proto(state))
    elif isinstance(state, StoredMessage):
        message.message.CopyFrom(message_to_proto(_key(change), state))
    elif isinstance(state, Memory):
        message.memory.CopyFrom(memory_to_proto(state))
    elif isinstance(state, MemoryTombstone):
        message.tombstone.CopyFrom(tombstone_to_proto(state))
    elif isinstance(state, MemorySettings):
        message.memory_settings.CopyFrom(settings_to_proto(state))
    elif isinstance(state, Consent):
        message.consent.CopyFrom(consent_to_proto(state))
    elif isinstance(state, MemoryCandidate):
        message.candidate.CopyFrom(candidate_to_proto(state))
    elif isinstance(state, FailedRun):
        message.failed_run.CopyFrom(failed_run_to_proto(_key(change), state))
    elif isinstance(state, Document):
        message.document.CopyFrom(document_to_proto(state, with_index=True))
    elif isinstance(state, CheckpointRef):
        message.checkpoint.CopyFrom(ref_to_proto(change.user_id, state))
    return message


def changes_to_proto(changes: tuple[Change, ...]) -> list[pb.Change]:
    return [change_to_proto(c) for c in changes]


def heartbeat_to_proto(beat: Heartbeat) -> pb.WatchChangesResponse:
    """A watch's heartbeat message."""
    time = timestamp_pb2.Timestamp()
    time.FromDatetime(beat.time)
    return pb.WatchChangesResponse(heartbeat=pb.Heartbeat(cursor=beat.cursor, time=time))
