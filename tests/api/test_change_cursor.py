"""``change_cursor`` through a real server: every write RPC answers the cursor
of the last change it appended (the user's newest cursor, as the store reads
it right after the call), a replay of an idempotent request answers the same
cursor, and a write that changes nothing answers 0. On every backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import field_mask_pb2
from sqlalchemy import select

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import (
    conversations_pb2_grpc,
    governance_pb2_grpc,
    memories_pb2_grpc,
    working_memory_pb2_grpc,
)
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from mnemo_server.store.schema import change_cursors
from tests.api.user_data import export, load
from tests.support.user_rows import connected

ALICE = "users/alice"
CHAT = f"{ALICE}/conversations/chat"

WRITE_RESPONSES = {
    "SaveMemoryState",
    "RememberExchange",
    "ClearMemoryState",
    "CreateConversation",
    "UpdateConversation",
    "DeleteConversation",
    "AppendMessages",
    "ClearMessages",
    "PopMessages",
    "RecordFailedRun",
    "ReplaceHistoryPrefix",
    "CreateMemory",
    "BatchCreateMemories",
    "UpdateMemory",
    "DeleteMemory",
    "ExtractMemories",
    "ProposeMemoryCandidates",
    "ApproveMemoryCandidate",
    "RejectMemoryCandidate",
    "SetConsent",
    "UpdateMemorySettings",
    "ImportUserData",
    "DeleteUserData",
}


def _latest(database_url: str, user_id: str) -> int:
    with connected(database_url) as conn:
        found = conn.execute(
            select(change_cursors.c.last_cursor).where(change_cursors.c.user_id == user_id)
        ).scalar_one_or_none()
    return 0 if found is None else int(found)


def _message(text: str) -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": text}))


def test_the_write_responses_are_the_ones_with_a_change_cursor() -> None:
    with_cursor = set()
    for module in (cv, gv, mm, wm):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                if "change_cursor" in method.output_type.fields_by_name:
                    with_cursor.add(method.name)
    assert with_cursor == WRITE_RESPONSES


def test_every_write_answers_the_cursor_of_its_last_change(
    channel: grpc.Channel, database_url: str
) -> None:
    states = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    seen: dict[str, int] = {}

    def check(method: str, call: Callable[[], Any]) -> Any:
        before = _latest(database_url, "alice")
        response = call()
        cursor = response.change_cursor
        assert cursor == _latest(database_url, "alice"), method
        assert cursor > before, method
        seen[method] = cursor
        return response

    check(
        "SaveMemoryState",
        lambda: states.SaveMemoryState(
            wm.SaveMemoryStateRequest(memory_state=wm.MemoryState(name=f"{ALICE}/memoryState"))
        ),
    )
    remembered = check(
        "RememberExchange",
        lambda: states.RememberExchange(
            wm.RememberExchangeRequest(
                name=f"{CHAT}/memoryState", exchange=wm.Exchange(ask="a"), request_id="r1"
            )
        ),
    )
    check(
        "ClearMemoryState",
        lambda: states.ClearMemoryState(wm.ClearMemoryStateRequest(name=f"{CHAT}/memoryState")),
    )
    check(
        "CreateConversation",
        lambda: history.CreateConversation(
            cv.CreateConversationRequest(parent=ALICE, conversation_id="c2")
        ),
    )
    check(
        "UpdateConversation",
        lambda: history.UpdateConversation(
            cv.UpdateConversationRequest(
                conversation=cv.Conversation(name=f"{ALICE}/conversations/c2"),
                update_mask=field_mask_pb2.FieldMask(paths=["metadata"]),
            )
        ),
    )
    check(
        "DeleteConversation",
        lambda: history.DeleteConversation(
            cv.DeleteConversationRequest(name=f"{ALICE}/conversations/c2")
        ),
    )
    appended = check(
        "AppendMessages",
        lambda: history.AppendMessages(
            cv.AppendMessagesRequest(
                conversation=CHAT, messages=[_message("one"), _message("two")], request_id="a1"
            )
        ),
    )
    snapshot = history.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=CHAT))
    check(
        "ReplaceHistoryPrefix",
        lambda: history.ReplaceHistoryPrefix(
            cv.ReplaceHistoryPrefixRequest(
                conversation=CHAT,
                revision=snapshot.revision,
                message_count=1,
                replacement=[_message("sum")],
                run_id="c",
            )
        ),
    )
    check(
        "RecordFailedRun",
        lambda: history.RecordFailedRun(
            cv.RecordFailedRunRequest(
                conversation=CHAT, run_id="r", error=cv.RunError(message="boom")
            )
        ),
    )
    check(
        "PopMessages",
        lambda: history.PopMessages(cv.PopMessagesRequest(conversation=CHAT, count=1)),
    )
    check(
        "ClearMessages",
        lambda: history.ClearMessages(cv.ClearMessagesRequest(conversation=CHAT)),
    )
    created = check(
        "CreateMemory",
        lambda: memories.CreateMemory(
            mm.CreateMemoryRequest(parent=ALICE, memory=mm.Memory(text="likes tea"))
        ),
    )
    check(
        "BatchCreateMemories",
        lambda: memories.BatchCreateMemories(
            mm.BatchCreateMemoriesRequest(
                parent=ALICE,
                requests=[
                    mm.CreateMemoryRequest(parent=ALICE, memory=mm.Memory(text=text))
                    for text in ("likes jazz", "walks at noon")
                ],
            )
        ),
    )
    check(
        "UpdateMemory",
        lambda: memories.UpdateMemory(
            mm.UpdateMemoryRequest(
                memory=mm.Memory(name=created.memory.name, text="likes green tea"),
                update_mask=field_mask_pb2.FieldMask(paths=["text"]),
            )
        ),
    )
    check(
        "DeleteMemory",
        lambda: memories.DeleteMemory(mm.DeleteMemoryRequest(name=created.memory.name)),
    )
    check(
        "ExtractMemories",
        lambda: memories.ExtractMemories(
            mm.ExtractMemoriesRequest(
                parent=ALICE,
                conversation=CHAT,
                messages=[_message("My name is Alice and I live in Paris.")],
                run_id="x",
                require_approval=True,
            )
        ),
    )
    proposed = check(
        "ProposeMemoryCandidates",
        lambda: memories.ProposeMemoryCandidates(
            mm.ProposeMemoryCandidatesRequest(
                parent=ALICE,
                candidates=[
                    mm.MemoryCandidate(memory=mm.Memory(text=f"fact {i}"), extractor="t")
                    for i in range(2)
                ],
            )
        ),
    ).candidates
    check(
        "ApproveMemoryCandidate",
        lambda: memories.ApproveMemoryCandidate(
            mm.ApproveMemoryCandidateRequest(name=proposed[0].name)
        ),
    )
    check(
        "RejectMemoryCandidate",
        lambda: memories.RejectMemoryCandidate(
            mm.RejectMemoryCandidateRequest(name=proposed[1].name)
        ),
    )
    check(
        "UpdateMemorySettings",
        lambda: governance.UpdateMemorySettings(
            gv.UpdateMemorySettingsRequest(
                memory_settings=gv.MemorySettings(name=f"{ALICE}/memorySettings", enabled=True)
            )
        ),
    )
    check(
        "SetConsent",
        lambda: governance.SetConsent(
            gv.SetConsentRequest(
                consent=gv.Consent(
                    name=f"{ALICE}/consent", state=gv.CONSENT_STATE_GRANTED, policy_version="v1"
                )
            )
        ),
    )
    # A replay answers the recorded cursor (not the newest); nothing is appended.
    latest = _latest(database_url, "alice")
    replayed = history.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=CHAT, messages=[_message("one"), _message("two")], request_id="a1"
        )
    )
    assert replayed.change_cursor == appended.change_cursor < latest
    again = states.RememberExchange(
        wm.RememberExchangeRequest(
            name=f"{CHAT}/memoryState", exchange=wm.Exchange(ask="a"), request_id="r1"
        )
    )
    assert again.change_cursor == remembered.change_cursor
    assert _latest(database_url, "alice") == latest

    records = export(channel, "alice")
    check(
        "DeleteUserData",
        lambda: governance.DeleteUserData(gv.DeleteUserDataRequest(parent=ALICE)),
    )
    # The erasure leaves its change; an import into the erased user is allowed.
    check("ImportUserData", lambda: load(channel, "alice", records))
    assert set(seen) == WRITE_RESPONSES
    assert list(seen.values()) == sorted(seen.values())


def test_a_write_that_changes_nothing_answers_zero(channel: grpc.Channel) -> None:
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    consent = gv.SetConsentRequest(
        consent=gv.Consent(
            name=f"{ALICE}/consent", state=gv.CONSENT_STATE_GRANTED, policy_version="v1"
        )
    )
    assert governance.SetConsent(consent).change_cursor > 0
    assert governance.SetConsent(consent).change_cursor == 0  # already so
    created = memories.CreateMemory(
        mm.CreateMemoryRequest(parent=ALICE, memory=mm.Memory(text="fact"))
    )
    deleted = memories.DeleteMemory(mm.DeleteMemoryRequest(name=created.memory.name))
    assert deleted.change_cursor > created.change_cursor
    again = memories.DeleteMemory(mm.DeleteMemoryRequest(name=created.memory.name))
    assert again.change_cursor == 0  # the tombstone, returned again
