"""Shared helpers of the user-data tests (export, import, erasure): a user
with data of every kind, written through the API, and the three RPCs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import duration_pb2, field_mask_pb2, struct_pb2

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import (
    conversations_pb2_grpc,
    documents_pb2_grpc,
    governance_pb2_grpc,
    memories_pb2_grpc,
    working_memory_pb2_grpc,
)
from mnemo.v1 import documents_pb2 as dc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.checkpoint_data import populate_checkpoints

TIMEOUT_S = 30.0


def _message(text: str, role: str = "user") -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": role, "content": text}))


def _documents(channel: grpc.Channel, parent: str, mark: str) -> None:
    """Documents: whole-value text, indexed texts with embeddings, not
    indexed, with a ttl, replaced, deleted."""
    stub = documents_pb2_grpc.DocumentServiceStub(channel)

    def put(key: str, value: dict[str, Any], **fields: Any) -> None:
        index = fields.pop("index", None)
        request = dc.PutDocumentRequest(
            parent=parent,
            document=dc.Document(
                namespace=["prefs", mark], key=key, value_json=json.dumps(value), **fields
            ),
            request_id=f"doc-{key}",
        )
        if index is not None:
            request.index.CopyFrom(index)
        stub.PutDocument(request)

    put("plain", {"text": f"plain {mark}", "n": 1.5, "deep": {"list": [1, None, True]}})
    embedded = dc.IndexedText(path="text", text=f"vector {mark}", embedding=[0.5, -0.25])
    put("vector", {"text": f"vector {mark}"}, index=dc.DocumentIndex(texts=[embedded]))
    put("hidden", {"text": f"hidden {mark}"}, index=dc.DocumentIndex())
    put("ttl", {"text": f"ttl {mark}"}, ttl=duration_pb2.Duration(seconds=86_400))
    put("gone", {"text": f"gone {mark}"})
    stub.DeleteDocument(
        dc.DeleteDocumentRequest(parent=parent, namespace=["prefs", mark], key="gone")
    )


def populate(channel: grpc.Channel, user: str, mark: str) -> None:
    """Give ``user`` data of every kind, with ``mark`` in every text: working
    memory (default and named), conversations with metadata (one temporary),
    messages, compaction checkpoints (two in a row; a history cleared after
    one), failed runs, memories (superseded, updated, deleted, with vectors,
    conversation-scoped), candidates (pending, approved, rejected, approved
    into a deleted entry), documents, consent, settings and the events all this records;
    idempotency records too (request ids)."""
    parent = f"users/{user}"
    c1, c2, c3 = (f"{parent}/conversations/{c}" for c in ("c1", "c2", "c3"))
    states = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)

    states.SaveMemoryState(
        wm.SaveMemoryStateRequest(
            memory_state=wm.MemoryState(
                name=f"{parent}/memoryState",
                summary=f"summary {mark}",
                recent=[wm.Exchange(ask=f"ask {mark}", answer=f"answer {mark}")],
            )
        )
    )
    metadata = struct_pb2.Struct()
    metadata.update({"topic": f"topic {mark}", "n": 5, "tags": ["a", mark], "deep": {"x": None}})
    history.CreateConversation(
        cv.CreateConversationRequest(
            parent=parent,
            conversation_id="c1",
            conversation=cv.Conversation(metadata=metadata),
            request_id="create-c1",
        )
    )
    history.CreateConversation(
        cv.CreateConversationRequest(
            parent=parent, conversation_id="temp", conversation=cv.Conversation(temporary=True)
        )
    )
    states.RememberExchange(
        wm.RememberExchangeRequest(
            name=f"{c1}/memoryState", exchange=wm.Exchange(ask=f"named {mark}"), request_id="r1"
        )
    )
    for conversation in (c1, c2, c3):
        history.AppendMessages(
            cv.AppendMessagesRequest(
                conversation=conversation,
                messages=[_message(f"hello {mark} {i}") for i in range(4)],
                run_id="run-1",
                turn=2,
                request_id=f"append-{conversation[-2:]}",
            )
        )
    for conversation, times in ((c1, 2), (c2, 1)):
        for _ in range(times):
            snapshot = history.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=conversation))
            history.ReplaceHistoryPrefix(
                cv.ReplaceHistoryPrefixRequest(
                    conversation=conversation,
                    revision=snapshot.revision,
                    message_count=2,
                    replacement=[_message(f"compacted {mark}", "system")],
                    run_id="compactor",
                )
            )
    history.ClearMessages(cv.ClearMessagesRequest(conversation=c3))
    history.AppendMessages(
        cv.AppendMessagesRequest(conversation=c3, messages=[_message(f"after clear {mark}")])
    )
    history.RecordFailedRun(
        cv.RecordFailedRunRequest(
            conversation=c1,
            run_id="run-2",
            error=cv.RunError(message=f"boom {mark}", code="E1", details_json='{"why": 1}'),
            messages=[_message(f"partial {mark}", "assistant")],
        )
    )

    def save(text: str, memory_id: str = "", **fields: Any) -> mm.Memory:
        request = mm.CreateMemoryRequest(
            parent=parent, memory=mm.Memory(text=text, **fields), memory_id=memory_id
        )
        memory: mm.Memory = memories.CreateMemory(request).memory
        return memory

    vector = mm.Embedding(model="test-3d", values=[0.25, -1.5, 3.0])
    save(f"Likes tea {mark}", key="drink", metadata={"origin": mark}, embedding=vector)
    save(f"Likes coffee {mark}", key="drink", pinned=True, embedding=vector)
    updated = save(f"Lives in Paris {mark}", memory_id="home")
    memories.UpdateMemory(
        mm.UpdateMemoryRequest(
            memory=mm.Memory(name=updated.name, text=f"Lives in Lyon {mark}", pinned=True),
            update_mask=field_mask_pb2.FieldMask(paths=["text", "pinned"]),
        )
    )
    doomed = save(f"Secret {mark}", key="secret")
    memories.DeleteMemory(mm.DeleteMemoryRequest(name=doomed.name))
    save(f"Order {mark}", scope=mm.MEMORY_SCOPE_CONVERSATION, conversation=c1, metadata={"k": mark})
    proposed = memories.ProposeMemoryCandidates(
        mm.ProposeMemoryCandidatesRequest(
            parent=parent,
            candidates=[
                mm.MemoryCandidate(
                    memory=mm.Memory(text=f"candidate {i} {mark}", key=f"k{i}"),
                    conversation=c1,
                    run_id="run-1",
                    turn=i,
                    extractor="test",
                )
                for i in range(4)
            ],
            request_id="propose-1",
        )
    ).candidates
    memories.ApproveMemoryCandidate(mm.ApproveMemoryCandidateRequest(name=proposed[0].name))
    memories.RejectMemoryCandidate(mm.RejectMemoryCandidateRequest(name=proposed[1].name))
    approved = memories.ApproveMemoryCandidate(
        mm.ApproveMemoryCandidateRequest(name=proposed[2].name)
    ).memory
    memories.DeleteMemory(mm.DeleteMemoryRequest(name=approved.name))
    list(memories.RecallMemories(mm.RecallMemoriesRequest(parent=parent, query="tea")))
    _documents(channel, parent, mark)
    governance.SetConsent(
        gv.SetConsentRequest(
            consent=gv.Consent(
                name=f"{parent}/consent", state=gv.CONSENT_STATE_GRANTED, policy_version="v2"
            )
        )
    )
    governance.UpdateMemorySettings(
        gv.UpdateMemorySettingsRequest(
            memory_settings=gv.MemorySettings(name=f"{parent}/memorySettings", enabled=True)
        )
    )
    populate_checkpoints(channel, user, mark)


def export(channel: grpc.Channel, user: str) -> list[gv.ExportRecord]:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    responses = stub.ExportUserData(
        gv.ExportUserDataRequest(parent=f"users/{user}"), timeout=TIMEOUT_S
    )
    return [response.record for response in responses]


def erase(channel: grpc.Channel, user: str) -> gv.DeleteUserDataResponse:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    response: gv.DeleteUserDataResponse = stub.DeleteUserData(
        gv.DeleteUserDataRequest(parent=f"users/{user}"), timeout=TIMEOUT_S
    )
    return response


def load(
    channel: grpc.Channel, user: str, records: Iterable[gv.ExportRecord]
) -> gv.ImportUserDataResponse:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    requests = (gv.ImportUserDataRequest(parent=f"users/{user}", record=r) for r in records)
    response: gv.ImportUserDataResponse = stub.ImportUserData(requests, timeout=TIMEOUT_S)
    return response


def serialized(records: Iterable[gv.ExportRecord]) -> list[bytes]:
    """Each record deterministically serialized (for exact comparisons)."""
    return [r.SerializeToString(deterministic=True) for r in records]
