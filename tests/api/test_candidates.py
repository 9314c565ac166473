"""Extraction with approval through a real server: the built-in extractor over
Anvia-shaped messages, client-proposed candidates, approve and reject."""

from __future__ import annotations

from typing import Any

import grpc

from mnemo.v1 import memories_pb2 as pb
from tests.api.memories import C1, USER, Stub, chat, listed, recall, texts
from tests.support.rpc_errors import rpc_failure

ADA = chat(
    ("system", "You are a helpful assistant. My name is Botty."),
    ("user", "My name is Ada and I'm allergic to peanuts"),
    ("assistant", "Nice to meet you, Ada! I love peanuts myself."),
)


def _extract(stub: Stub, messages: Any, **fields: Any) -> pb.ExtractMemoriesResponse:
    request = pb.ExtractMemoriesRequest(parent=USER, messages=messages, **fields)
    response: pb.ExtractMemoriesResponse = stub.ExtractMemories(request)
    return response


def _pending(stub: Stub, **fields: Any) -> list[pb.MemoryCandidate]:
    response = stub.ListMemoryCandidates(pb.ListMemoryCandidatesRequest(parent=USER, **fields))
    return list(response.candidates)


def _approve(stub: Stub, name: str) -> pb.ApproveMemoryCandidateResponse:
    response: pb.ApproveMemoryCandidateResponse = stub.ApproveMemoryCandidate(
        pb.ApproveMemoryCandidateRequest(name=name)
    )
    return response


def _reject(stub: Stub, name: str) -> pb.MemoryCandidate:
    candidate: pb.MemoryCandidate = stub.RejectMemoryCandidate(
        pb.RejectMemoryCandidateRequest(name=name)
    ).candidate
    return candidate


def test_extracted_candidates_wait_for_approval(memories: Stub) -> None:
    found = _extract(memories, ADA, conversation=C1, run_id="run-7", turn=3, require_approval=True)
    assert list(found.memories) == []  # nothing saved yet
    by_text = {c.memory.text: c for c in found.candidates}
    assert set(by_text) == {"The user's name is Ada.", "The user is allergic to peanuts."}
    for candidate in found.candidates:
        assert candidate.name.startswith(f"{USER}/memoryCandidates/")
        assert candidate.state == pb.CANDIDATE_STATE_PENDING
        assert (candidate.conversation, candidate.run_id, candidate.turn) == (C1, "run-7", 3)
        assert candidate.extractor.startswith("mnemo-heuristic-v1:")
        assert candidate.memory.source == pb.MEMORY_SOURCE_EXTRACTOR
        assert candidate.HasField("create_time") and not candidate.saved_memory
    name, allergy = by_text["The user's name is Ada."], by_text["The user is allergic to peanuts."]
    assert (name.memory.key, allergy.memory.key) == ("profile.name", "health.allergy.peanut")
    assert sorted(c.name for c in _pending(memories)) == sorted(by_text[t].name for t in by_text)
    assert listed(memories) == []

    approved = _approve(memories, allergy.name)
    assert approved.memory.text == "The user is allergic to peanuts."
    assert approved.memory.source == pb.MEMORY_SOURCE_EXTRACTOR
    assert approved.memory.key == "health.allergy.peanut"
    assert approved.candidate.state == pb.CANDIDATE_STATE_APPROVED
    assert approved.candidate.saved_memory == approved.memory.name
    assert memories.GetMemory(pb.GetMemoryRequest(name=approved.memory.name)).memory == (
        approved.memory
    )
    again = _approve(memories, allergy.name)  # idempotent: changes nothing
    assert (again.memory, again.candidate) == (approved.memory, approved.candidate)
    assert (again.change_cursor, approved.change_cursor > 0) == (0, True)
    assert texts(recall(memories, "peanut allergy")) == ["The user is allergic to peanuts."]

    rejected = _reject(memories, name.name)
    assert rejected.state == pb.CANDIDATE_STATE_REJECTED and not rejected.saved_memory
    assert _reject(memories, name.name) == rejected  # idempotent
    assert listed(memories) == [approved.memory]  # the rejected one was never saved
    assert _pending(memories) == []
    resolved = _pending(memories, include_resolved=True)
    assert sorted(c.state for c in resolved) == [
        pb.CANDIDATE_STATE_APPROVED,
        pb.CANDIDATE_STATE_REJECTED,
    ]

    for call, request in (
        (memories.RejectMemoryCandidate, pb.RejectMemoryCandidateRequest(name=allergy.name)),
        (memories.ApproveMemoryCandidate, pb.ApproveMemoryCandidateRequest(name=name.name)),
    ):
        failure = rpc_failure(call, request)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "CANDIDATE_RESOLVED",
        )
    missing = rpc_failure(
        memories.ApproveMemoryCandidate,
        pb.ApproveMemoryCandidateRequest(name=f"{USER}/memoryCandidates/nope"),
    )
    assert missing.code is grpc.StatusCode.NOT_FOUND


def test_extraction_without_approval_saves_keyed_entries(memories: Stub) -> None:
    first = _extract(memories, ADA, request_id="x-1")
    assert list(first.candidates) == []
    assert {(m.text, m.source) for m in first.memories} == {
        ("The user's name is Ada.", pb.MEMORY_SOURCE_EXTRACTOR),
        ("The user is allergic to peanuts.", pb.MEMORY_SOURCE_EXTRACTOR),
    }
    assert _extract(memories, ADA, request_id="x-1") == first  # a retry saves nothing twice
    assert len(listed(memories, include_archived=True)) == 2

    later = _extract(memories, chat(("user", "Actually, call me Grace. I live in Lisbon.")))
    assert sorted(m.text for m in later.memories) == [
        "The user lives in Lisbon.",
        "The user wants to be called Grace.",
    ]
    again = _extract(memories, chat(("user", "Sorry, my name is Grace Hopper.")))
    (renamed,) = again.memories
    assert renamed.key == "profile.name"
    live_names = [m.text for m in listed(memories, key="profile.name")]
    assert live_names == ["The user's name is Grace Hopper."]  # superseded Ada
    assert _extract(memories, chat(("user", "What's the weather like?"))) == (
        pb.ExtractMemoriesResponse()
    )


def test_client_proposed_candidates_are_pending_until_approved(memories: Stub) -> None:
    request = pb.ProposeMemoryCandidatesRequest(
        parent=USER,
        candidates=[
            pb.MemoryCandidate(
                memory=pb.Memory(text="Is training for a marathon", key="goal", pinned=True),
                conversation=C1,
                run_id="run-1",
                turn=2,
                extractor="app-llm-v3",
            ),
            pb.MemoryCandidate(
                memory=pb.Memory(
                    text="Wants reminders in French",
                    scope=pb.MEMORY_SCOPE_CONVERSATION,
                    conversation=C1,
                    metadata={"confidence": "0.8"},
                ),
                extractor="app-llm-v3",
            ),
        ],
        request_id="p-1",
    )
    proposed = memories.ProposeMemoryCandidates(request).candidates
    assert [c.memory.text for c in proposed] == [
        "Is training for a marathon",
        "Wants reminders in French",
    ]
    marathon, french = proposed
    assert (marathon.conversation, marathon.run_id, marathon.turn, marathon.extractor) == (
        C1,
        "run-1",
        2,
        "app-llm-v3",
    )
    assert marathon.memory.pinned and marathon.memory.key == "goal"
    assert (french.memory.scope, french.memory.conversation, french.conversation) == (
        pb.MEMORY_SCOPE_CONVERSATION,
        C1,
        "",
    )
    assert memories.ProposeMemoryCandidates(request).candidates == proposed  # idempotent
    assert len(_pending(memories)) == 2

    saved = _approve(memories, french.name).memory
    assert (saved.scope, saved.conversation, dict(saved.metadata)) == (
        pb.MEMORY_SCOPE_CONVERSATION,
        C1,
        {"confidence": "0.8"},
    )
    assert saved.source == pb.MEMORY_SOURCE_EXTRACTOR
    assert [c.name for c in _pending(memories)] == [marathon.name]

    request.candidates[0].memory.text = "Is training for a triathlon"
    reused = rpc_failure(memories.ProposeMemoryCandidates, request)
    assert (reused.code, reused.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "REQUEST_ID_REUSED",
    )
    too_large = rpc_failure(
        memories.ProposeMemoryCandidates,
        pb.ProposeMemoryCandidatesRequest(
            parent=USER,
            candidates=[pb.MemoryCandidate(memory=pb.Memory(text="ok"))]
            + [pb.MemoryCandidate(memory=pb.Memory(text="x" * 5000))],
        ),
    )
    assert (too_large.reason, too_large.fields) == (
        "FIELD_TOO_LARGE",
        ("candidates[1].memory.text",),
    )
