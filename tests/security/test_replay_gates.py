"""A replayed memory write (the same ``request_id`` and body) passes the
governance gates again (issue 34, item 10), against a live server on both stores.

Every gated write that takes a ``request_id`` — ``CreateMemory``,
``BatchCreateMemories``, ``ProposeMemoryCandidates``, ``ExtractMemories``,
``PutDocument`` — first succeeds with the gate open; then the gate closes
(the memory switch off, consent withdrawn, or, for a write from a
conversation, that conversation is a temporary one) and the very same
request comes again. It answers the gate's ``FAILED_PRECONDITION``
(``MEMORY_DISABLED``, ``MEMORY_CONSENT_WITHDRAWN``, ``TEMPORARY_CONVERSATION``)
and changes nothing (the user's change feed does not move), instead of the
recorded result with the entry's name and etag. With the gate open again,
the same request is answered from its record once more: the refusal kept it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import (
    conversations_pb2_grpc,
    documents_pb2_grpc,
    governance_pb2_grpc,
    memories_pb2_grpc,
    sync_pb2_grpc,
)
from mnemo.v1 import documents_pb2 as dc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import sync_pb2 as sy
from tests.support.rpc_errors import rpc_failure
from tests.support.server import running_server

pytestmark = pytest.mark.timeout(120)

USER = "u1"
PARENT = f"users/{USER}"
CHAT = f"{PARENT}/conversations/chat"
TIMEOUT_S = 30.0


@dataclass
class Stubs:
    memories: memories_pb2_grpc.MemoryServiceStub
    documents: documents_pb2_grpc.DocumentServiceStub
    governance: governance_pb2_grpc.GovernanceServiceStub
    conversations: conversations_pb2_grpc.ConversationServiceStub
    sync: sync_pb2_grpc.SyncServiceStub


@pytest.fixture
def stubs(database_url: str) -> Iterator[Stubs]:
    with running_server(database_url) as target, grpc.insecure_channel(target) as channel:
        yield Stubs(
            memories_pb2_grpc.MemoryServiceStub(channel),
            documents_pb2_grpc.DocumentServiceStub(channel),
            governance_pb2_grpc.GovernanceServiceStub(channel),
            conversations_pb2_grpc.ConversationServiceStub(channel),
            sync_pb2_grpc.SyncServiceStub(channel),
        )


def _said(text: str) -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": text}))


@dataclass(frozen=True)
class Write:
    """A gated write with a ``request_id``: its stub method and its request,
    coming from conversation ``CHAT`` (``origin``) or from no conversation."""

    method: Callable[[Stubs], Callable[..., Any]]
    request: Callable[[str], Message]
    """The request, given the conversation it comes from (``""``: none)."""
    temporary_gate: bool = True
    """Whether the temporary-conversation gate applies (documents: no)."""


WRITES: dict[str, Write] = {
    "CreateMemory": Write(
        lambda s: s.memories.CreateMemory,
        lambda origin: mm.CreateMemoryRequest(
            parent=PARENT,
            memory=mm.Memory(text="My diagnosis is lupus."),
            memory_id="m1",
            request_id="create-1",
            origin_conversation=origin,
        ),
    ),
    "BatchCreateMemories": Write(
        lambda s: s.memories.BatchCreateMemories,
        lambda origin: mm.BatchCreateMemoriesRequest(
            parent=PARENT,
            requests=[
                mm.CreateMemoryRequest(
                    memory=mm.Memory(text=f"Fact number {i}."),
                    memory_id=f"b{i}",
                    origin_conversation=origin,
                )
                for i in range(3)
            ],
            request_id="batch-1",
        ),
    ),
    "ProposeMemoryCandidates": Write(
        lambda s: s.memories.ProposeMemoryCandidates,
        lambda origin: mm.ProposeMemoryCandidatesRequest(
            parent=PARENT,
            candidates=[
                mm.MemoryCandidate(
                    memory=mm.Memory(text="The user lives in Paris."), conversation=origin
                )
            ],
            request_id="propose-1",
        ),
    ),
    "ExtractMemories": Write(
        lambda s: s.memories.ExtractMemories,
        lambda origin: mm.ExtractMemoriesRequest(
            parent=PARENT,
            conversation=origin,
            messages=[_said("My name is Ada and I live in Lyon.")],
            run_id="run",
            request_id="extract-1",
        ),
    ),
    "PutDocument": Write(
        lambda s: s.documents.PutDocument,
        lambda origin: dc.PutDocumentRequest(
            parent=PARENT,
            document=dc.Document(namespace=["notes"], key="k", value_json='{"a": 1}'),
            request_id="put-1",
        ),
        temporary_gate=False,
    ),
}


def _switch(s: Stubs, enabled: bool) -> None:
    s.governance.UpdateMemorySettings(
        gv.UpdateMemorySettingsRequest(
            memory_settings=gv.MemorySettings(name=f"{PARENT}/memorySettings", enabled=enabled)
        ),
        timeout=TIMEOUT_S,
    )


def _consent(s: Stubs, state: gv.ConsentState) -> None:
    s.governance.SetConsent(
        gv.SetConsentRequest(consent=gv.Consent(name=f"{PARENT}/consent", state=state)),
        timeout=TIMEOUT_S,
    )


GATES: dict[str, tuple[str, Callable[[Stubs], None], Callable[[Stubs], None]]] = {
    # name: (the refusal's reason, close the gate, open it again)
    "switch off": ("MEMORY_DISABLED", lambda s: _switch(s, False), lambda s: _switch(s, True)),
    "consent withdrawn": (
        "MEMORY_CONSENT_WITHDRAWN",
        lambda s: _consent(s, gv.CONSENT_STATE_WITHDRAWN),
        lambda s: _consent(s, gv.CONSENT_STATE_GRANTED),
    ),
}


def _latest_cursor(s: Stubs) -> int:
    page = s.sync.ListChanges(sy.ListChangesRequest(parent=PARENT, page_size=1), timeout=TIMEOUT_S)
    return int(page.latest_cursor)


@pytest.mark.parametrize("gate", sorted(GATES))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_replay_under_a_closed_gate_is_refused_and_changes_nothing(
    stubs: Stubs, write: str, gate: str
) -> None:
    spec = WRITES[write]
    reason, close, reopen = GATES[gate]
    request = spec.request(CHAT)
    call = spec.method(stubs)
    first = call(request, timeout=TIMEOUT_S)
    assert first.change_cursor > 0
    close(stubs)
    before = _latest_cursor(stubs)

    refused = rpc_failure(call, request, timeout=TIMEOUT_S)

    assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, reason)
    assert refused.metadata["user"] == PARENT
    assert _latest_cursor(stubs) == before  # nothing written, not even an event's change
    # The record stays: once the gate is open, the same request replays it.
    reopen(stubs)
    assert call(request, timeout=TIMEOUT_S) == first


@pytest.mark.parametrize(
    "write", sorted(name for name, spec in WRITES.items() if spec.temporary_gate)
)
def test_a_replay_from_a_conversation_now_temporary_is_refused(stubs: Stubs, write: str) -> None:
    """The first call named a conversation that did not exist yet; it was
    then created temporary, so the same request now comes from a temporary
    conversation."""
    spec = WRITES[write]
    request = spec.request(CHAT)
    call = spec.method(stubs)
    first = call(request, timeout=TIMEOUT_S)
    assert first.change_cursor > 0
    stubs.conversations.CreateConversation(
        cv.CreateConversationRequest(
            parent=PARENT, conversation_id="chat", conversation=cv.Conversation(temporary=True)
        ),
        timeout=TIMEOUT_S,
    )
    before = _latest_cursor(stubs)

    refused = rpc_failure(call, request, timeout=TIMEOUT_S)

    assert (refused.code, refused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "TEMPORARY_CONVERSATION",
    )
    assert refused.metadata["conversation"] == CHAT
    assert _latest_cursor(stubs) == before


def test_a_replay_with_the_gate_open_still_answers_the_first_result(stubs: Stubs) -> None:
    """The gate decides, not the replay: while it is open a replay is
    answered from the record, writing nothing."""
    request = mm.CreateMemoryRequest(
        parent=PARENT, memory=mm.Memory(text="My diagnosis is lupus."), request_id="create-2"
    )
    first = stubs.memories.CreateMemory(request, timeout=TIMEOUT_S)
    before = _latest_cursor(stubs)
    again = stubs.memories.CreateMemory(request, timeout=TIMEOUT_S)
    assert again == first
    assert again.outcome == mm.SAVE_OUTCOME_CREATED
    assert _latest_cursor(stubs) == before
