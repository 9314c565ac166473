"""The memory gates through a real server, table-driven: every gated RPC under
every gate, strongest first; recall and inject return nothing; entries stay;
and a write racing a withdrawal never lands after it
(tests/concurrency/test_consent_race.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as pb
from tests.api.governance import (
    GRANTED,
    WITHDRAWN,
    Governance,
    failure,
    set_consent,
    switch,
)
from tests.api.memories import USER, Stub, chat, create, listed

TEMPORARY = f"{USER}/conversations/t1"
FACT = chat(("user", "My name is Ada and I'm allergic to peanuts"))
NOTHING = chat(("user", "What a lovely day"))


@dataclass(frozen=True)
class Existing:
    """What a user had before a gate closed."""

    memory: str
    candidate: str


@dataclass(frozen=True)
class Gated:
    """One gated call: its RPC and label, what it sends, and which gates apply."""

    label: str
    call: Callable[[Stub, Existing], Any]
    read: bool = False
    temporary: bool = False
    """The call names the temporary conversation."""


def _candidate(**memory: Any) -> pb.MemoryCandidate:
    conversation = memory.pop("candidate_conversation", "")
    return pb.MemoryCandidate(memory=pb.Memory(**memory), conversation=conversation)


def _batch_with(stub: Stub, second: pb.CreateMemoryRequest) -> Any:
    """A batch of an ordinary entry and ``second``."""
    first = pb.CreateMemoryRequest(memory=pb.Memory(text="Has a dog"))
    request = pb.BatchCreateMemoriesRequest(parent=USER, requests=[first, second])
    return stub.BatchCreateMemories(request)


CALLS = (
    Gated("CreateMemory", lambda s, e: create(s, "Lives in Oslo", key="home")),
    Gated(
        "BatchCreateMemories",
        lambda s, e: s.BatchCreateMemories(
            pb.BatchCreateMemoriesRequest(
                parent=USER,
                requests=[
                    pb.CreateMemoryRequest(memory=pb.Memory(text="Lives in Oslo", key="home")),
                    pb.CreateMemoryRequest(memory=pb.Memory(text="Has a dog")),
                ],
            )
        ),
    ),
    Gated(
        "UpdateMemory",
        lambda s, e: s.UpdateMemory(
            pb.UpdateMemoryRequest(memory=pb.Memory(name=e.memory, text="Drinks coffee"))
        ),
    ),
    Gated("DeleteMemory", lambda s, e: s.DeleteMemory(pb.DeleteMemoryRequest(name=e.memory))),
    Gated(
        "ExtractMemories",
        lambda s, e: s.ExtractMemories(pb.ExtractMemoriesRequest(parent=USER, messages=FACT)),
    ),
    Gated(
        "ExtractMemories(nothing found)",
        lambda s, e: s.ExtractMemories(pb.ExtractMemoriesRequest(parent=USER, messages=NOTHING)),
    ),
    Gated(
        "ExtractMemories(approval)",
        lambda s, e: s.ExtractMemories(
            pb.ExtractMemoriesRequest(parent=USER, messages=FACT, require_approval=True)
        ),
    ),
    Gated(
        "ProposeMemoryCandidates",
        lambda s, e: s.ProposeMemoryCandidates(
            pb.ProposeMemoryCandidatesRequest(
                parent=USER, candidates=[_candidate(text="Likes green tea")]
            )
        ),
    ),
    Gated(
        "ApproveMemoryCandidate",
        lambda s, e: s.ApproveMemoryCandidate(pb.ApproveMemoryCandidateRequest(name=e.candidate)),
    ),
    # Writes naming the temporary conversation.
    Gated(
        "CreateMemory(temporary)",
        lambda s, e: create(
            s, "Wants short answers", conversation=TEMPORARY, scope=pb.MEMORY_SCOPE_CONVERSATION
        ),
        temporary=True,
    ),
    Gated(
        "BatchCreateMemories(temporary entry)",
        lambda s, e: _batch_with(
            s,
            pb.CreateMemoryRequest(
                memory=pb.Memory(
                    text="Wants short answers",
                    conversation=TEMPORARY,
                    scope=pb.MEMORY_SCOPE_CONVERSATION,
                )
            ),
        ),
        temporary=True,
    ),
    Gated(
        "CreateMemory(identity, from temporary)",
        lambda s, e: create(s, "Works at night", origin_conversation=TEMPORARY),
        temporary=True,
    ),
    Gated(
        "BatchCreateMemories(entry from temporary)",
        lambda s, e: _batch_with(
            s,
            pb.CreateMemoryRequest(
                memory=pb.Memory(text="Works at night"), origin_conversation=TEMPORARY
            ),
        ),
        temporary=True,
    ),
    Gated(
        "UpdateMemory(from temporary)",
        lambda s, e: s.UpdateMemory(
            pb.UpdateMemoryRequest(
                memory=pb.Memory(name=e.memory, text="Drinks tea"), origin_conversation=TEMPORARY
            )
        ),
        temporary=True,
    ),
    Gated(
        "DeleteMemory(from temporary)",
        lambda s, e: s.DeleteMemory(
            pb.DeleteMemoryRequest(name=e.memory, origin_conversation=TEMPORARY)
        ),
        temporary=True,
    ),
    Gated(
        "ExtractMemories(temporary)",
        lambda s, e: s.ExtractMemories(
            pb.ExtractMemoriesRequest(parent=USER, messages=FACT, conversation=TEMPORARY)
        ),
        temporary=True,
    ),
    Gated(
        "ExtractMemories(temporary, nothing found)",
        lambda s, e: s.ExtractMemories(
            pb.ExtractMemoriesRequest(parent=USER, messages=NOTHING, conversation=TEMPORARY)
        ),
        temporary=True,
    ),
    Gated(
        "ProposeMemoryCandidates(temporary)",
        lambda s, e: s.ProposeMemoryCandidates(
            pb.ProposeMemoryCandidatesRequest(
                parent=USER,
                candidates=[_candidate(text="Likes jasmine", candidate_conversation=TEMPORARY)],
            )
        ),
        temporary=True,
    ),
    Gated(
        "ProposeMemoryCandidates(temporary entry)",
        lambda s, e: s.ProposeMemoryCandidates(
            pb.ProposeMemoryCandidatesRequest(
                parent=USER,
                candidates=[
                    _candidate(
                        text="Short answers",
                        conversation=TEMPORARY,
                        scope=pb.MEMORY_SCOPE_CONVERSATION,
                    )
                ],
            )
        ),
        temporary=True,
    ),
    # Reads: only the user's switch applies.
    Gated("GetMemory", lambda s, e: s.GetMemory(pb.GetMemoryRequest(name=e.memory)), read=True),
    Gated(
        "ListMemories",
        lambda s, e: s.ListMemories(pb.ListMemoriesRequest(parent=USER)),
        read=True,
    ),
    Gated(
        "ListMemoryVersions",
        lambda s, e: s.ListMemoryVersions(pb.ListMemoryVersionsRequest(name=e.memory)),
        read=True,
    ),
    Gated(
        "ListMemoryCandidates",
        lambda s, e: s.ListMemoryCandidates(pb.ListMemoryCandidatesRequest(parent=USER)),
        read=True,
    ),
)


@dataclass(frozen=True)
class Scenario:
    """Gates to close, and the reason each kind of call then gets ("" = none)."""

    name: str
    withdraw: bool = False
    disable: bool = False
    enable_after: bool = False
    write: str = ""
    temporary_write: str = ""
    read: str = ""
    empty_recall: bool = False
    empty_inject: bool = False

    @property
    def expected(self) -> dict[str, str]:
        """Per call label, the reason expected ("" = success)."""
        result = {}
        for gated in CALLS:
            if gated.read:
                result[gated.label] = self.read
            elif gated.temporary:
                result[gated.label] = self.temporary_write
            else:
                result[gated.label] = self.write
        return result


CONSENT, TEMPORARY_REASON, DISABLED = (
    "MEMORY_CONSENT_WITHDRAWN",
    "TEMPORARY_CONVERSATION",
    "MEMORY_DISABLED",
)
SCENARIOS = (
    Scenario("open", temporary_write=TEMPORARY_REASON),
    Scenario(
        "withdrawn",
        withdraw=True,
        write=CONSENT,
        temporary_write=CONSENT,
        empty_recall=True,
        empty_inject=True,
    ),
    Scenario(
        "disabled",
        disable=True,
        write=DISABLED,
        temporary_write=TEMPORARY_REASON,
        read=DISABLED,
        empty_recall=True,
        empty_inject=True,
    ),
    Scenario(
        "withdrawn+disabled",
        withdraw=True,
        disable=True,
        write=CONSENT,
        temporary_write=CONSENT,
        read=DISABLED,
        empty_recall=True,
        empty_inject=True,
    ),
    Scenario(
        "withdrawn, enabled again",
        withdraw=True,
        disable=True,
        enable_after=True,
        write=CONSENT,
        temporary_write=CONSENT,
        empty_recall=True,
        empty_inject=True,
    ),
)


def _existing(
    memories: Stub, conversations: conversations_pb2_grpc.ConversationServiceStub
) -> Existing:
    conversations.CreateConversation(
        cv.CreateConversationRequest(
            parent=USER, conversation_id="t1", conversation=cv.Conversation(temporary=True)
        )
    )
    memory = create(memories, "Lives in Oslo", key="home")
    (candidate,) = memories.ProposeMemoryCandidates(
        pb.ProposeMemoryCandidatesRequest(parent=USER, candidates=[_candidate(text="Has a cat")])
    ).candidates
    return Existing(memory.name, candidate.name)


def _recalled(memories: Stub, conversation: str = "") -> list[str]:
    request = pb.RecallMemoriesRequest(parent=USER, query="Oslo", conversation=conversation)
    return [hit.memory.name for hit in memories.RecallMemories(request)]


def _injected(memories: Stub, conversation: str = "") -> list[str]:
    request = pb.BuildContextRequest(parent=USER, query="Oslo", conversation=conversation)
    context = memories.BuildContext(request)
    return [] if not context.system_message else list(context.memories)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_gated_rpc_under_every_gate(
    scenario: Scenario,
    memories: Stub,
    conversations: conversations_pb2_grpc.ConversationServiceStub,
    governance: Governance,
) -> None:
    existing = _existing(memories, conversations)
    before = listed(memories, include_archived=True)
    if scenario.withdraw:
        assert set_consent(governance, USER, WITHDRAWN).cancelled_candidates == 1
    if scenario.disable:
        switch(governance, USER, enabled=False)
    if scenario.enable_after:
        switch(governance, USER, enabled=True)

    # Recall and inject are empty, never an error, under a closed gate.
    assert (_recalled(memories) == []) is scenario.empty_recall
    assert (_injected(memories) == []) is scenario.empty_inject
    # Inject never in a temporary conversation; recall there is as anywhere.
    assert _injected(memories, TEMPORARY) == []
    assert (_recalled(memories, TEMPORARY) == []) is scenario.empty_recall

    # Reads first: a write that is let through changes what they return.
    outcomes = {}
    for gated in sorted(CALLS, key=lambda g: not g.read):
        failed = failure(lambda gated=gated: gated.call(memories, existing))  # type: ignore[misc]
        if failed is not None:
            assert failed.code is grpc.StatusCode.FAILED_PRECONDITION, (gated.label, failed)
            assert failed.metadata["user"] == USER
        outcomes[gated.label] = "" if failed is None else failed.reason
    assert outcomes == scenario.expected

    if scenario.write:
        # Nothing was written: every entry is as it was, none was added.
        switch(governance, USER, enabled=True)
        assert listed(memories, include_archived=True) == before


def test_withdrawal_cancels_pending_candidates_and_keeps_entries(
    memories: Stub, governance: Governance
) -> None:
    kept = [create(memories, text) for text in ("Lives in Oslo", "Has a cat")]
    proposed = memories.ProposeMemoryCandidates(
        pb.ProposeMemoryCandidatesRequest(
            parent=USER, candidates=[_candidate(text=t) for t in ("Likes tea", "Rides a bike")]
        )
    ).candidates
    rejected = memories.RejectMemoryCandidate(
        pb.RejectMemoryCandidateRequest(name=proposed[1].name)
    ).candidate

    withdrawn = set_consent(governance, USER, WITHDRAWN, "policy-2")
    assert withdrawn.cancelled_candidates == 1
    assert withdrawn.consent.state == WITHDRAWN
    assert withdrawn.consent.policy_version == "policy-2"
    # Again: nothing more to cancel, nothing changes.
    again = set_consent(governance, USER, WITHDRAWN, "policy-2")
    assert (again.cancelled_candidates, again.consent) == (0, withdrawn.consent)

    states = {
        c.name: c.state
        for c in memories.ListMemoryCandidates(
            pb.ListMemoryCandidatesRequest(parent=USER, include_resolved=True)
        ).candidates
    }
    assert states == {
        proposed[0].name: pb.CANDIDATE_STATE_CANCELLED,
        rejected.name: pb.CANDIDATE_STATE_REJECTED,
    }
    assert [m.name for m in listed(memories)] == [m.name for m in reversed(kept)]

    # Granting again opens the gate; a cancelled candidate stays cancelled.
    set_consent(governance, USER, GRANTED, "policy-3")
    approve = failure(
        lambda: memories.ApproveMemoryCandidate(
            pb.ApproveMemoryCandidateRequest(name=proposed[0].name)
        )
    )
    assert approve is not None and approve.reason == "CANDIDATE_RESOLVED"
    create(memories, "Works in Bergen")


# What each read returns once consent is withdrawn: the user's own reads are
# the right of access (the entries stay until erasure); what feeds the model
# returns nothing. One case per read RPC of MemoryService, plus the export.
READS_UNDER_WITHDRAWAL: dict[str, Callable[[Stub, Governance, Existing], list[str]]] = {
    "GetMemory": lambda s, g, e: [s.GetMemory(pb.GetMemoryRequest(name=e.memory)).memory.name],
    "ListMemories": lambda s, g, e: [
        m.name for m in s.ListMemories(pb.ListMemoriesRequest(parent=USER)).memories
    ],
    "ListMemoryVersions": lambda s, g, e: [
        m.name for m in s.ListMemoryVersions(pb.ListMemoryVersionsRequest(name=e.memory)).versions
    ],
    "ListMemoryCandidates": lambda s, g, e: [
        c.name
        for c in s.ListMemoryCandidates(
            pb.ListMemoryCandidatesRequest(parent=USER, include_resolved=True)
        ).candidates
    ],
    "ExportUserData": lambda s, g, e: [
        r.record.memory.name
        for r in g.ExportUserData(gv.ExportUserDataRequest(parent=USER))
        if r.record.HasField("memory")
    ],
    "RecallMemories": lambda s, g, e: _recalled(s),
    "BuildContext": lambda s, g, e: _injected(s),
}
EXPECTED_UNDER_WITHDRAWAL = {
    "GetMemory": "memory",
    "ListMemories": "memory",
    "ListMemoryVersions": "memory",
    "ListMemoryCandidates": "candidate",
    "ExportUserData": "memory",
    "RecallMemories": "",
    "BuildContext": "",
}


@pytest.mark.parametrize("read", sorted(READS_UNDER_WITHDRAWAL))
def test_each_read_under_withdrawn_consent(
    read: str,
    memories: Stub,
    conversations: conversations_pb2_grpc.ConversationServiceStub,
    governance: Governance,
) -> None:
    existing = _existing(memories, conversations)
    call = READS_UNDER_WITHDRAWAL[read]
    assert call(memories, governance, existing)  # before: every read finds something
    set_consent(governance, USER, WITHDRAWN)
    expected = {"memory": [existing.memory], "candidate": [existing.candidate], "": []}
    assert call(memories, governance, existing) == expected[EXPECTED_UNDER_WITHDRAWAL[read]]
