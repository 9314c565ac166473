"""ExportUserData and ImportUserData through a real server: export, erase,
import, export again gives the very same records (every kind of record,
compared serialized), the API shows the same data afterwards (revisions,
audit trails, candidates, events, recall), an import only goes into a user
without data, and invalid records are refused with violations naming them,
leaving nothing behind.

Every field of every record is preserved, ids, event ids and etags included.
What an export does not carry, because no RPC shows it, is not compared:
idempotency records (a retry cache), a resolved candidate's resolve time
(the import time afterwards), the user's vector-cache counter, and the
user's tenant (the importing caller's)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import grpc
from google.protobuf.message import Message

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
from mnemo_server.api.user_data.convert import RECORD_KINDS
from mnemo_server.domain.compaction import encode_revision
from tests.api.checkpoint_data import checkpoint_views
from tests.api.user_data import TIMEOUT_S, erase, export, load, populate, serialized
from tests.support.rpc_errors import rpc_failure
from tests.support.user_rows import user_digest

ALICE, BOB = "alice", "bob"


def _api_views(channel: grpc.Channel, user: str) -> list[Message]:
    """What the read RPCs show of ``user`` (nothing an import may change)."""
    parent = f"users/{user}"
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    states = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    views: list[Message] = [
        history.ListConversations(cv.ListConversationsRequest(parent=parent)),
        states.GetMemoryState(wm.GetMemoryStateRequest(name=f"{parent}/memoryState")),
        memories.ListMemoryCandidates(
            mm.ListMemoryCandidatesRequest(parent=parent, include_resolved=True)
        ),
        governance.ListEvents(gv.ListEventsRequest(parent=parent, page_size=500)),
        governance.GetConsent(gv.GetConsentRequest(name=f"{parent}/consent")),
        governance.GetMemorySettings(gv.GetMemorySettingsRequest(name=f"{parent}/memorySettings")),
    ]
    for conversation in ("c1", "c2", "c3"):
        name = f"{parent}/conversations/{conversation}"
        views.append(history.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=name)))
        views.append(history.ListFailedRuns(cv.ListFailedRunsRequest(parent=name)))
        views.append(states.GetMemoryState(wm.GetMemoryStateRequest(name=f"{name}/memoryState")))
    views += checkpoint_views(channel, user)
    listed = memories.ListMemories(mm.ListMemoriesRequest(parent=parent, include_archived=True))
    views.append(listed)
    for memory in listed.memories:
        views.append(memories.ListMemoryVersions(mm.ListMemoryVersionsRequest(name=memory.name)))
    return views


def _decision(records: list[gv.ExportRecord]) -> list[gv.ExportRecord]:
    """The consent and settings records of an export: what an erasure keeps."""
    return [r for r in records if r.WhichOneof("record") in ("consent", "memory_settings")]


def test_export_erase_import_export_gives_the_same_records(channel: grpc.Channel) -> None:
    populate(channel, ALICE, "Zqxjvalice")
    populate(channel, BOB, "Wvkqbob")
    before = _api_views(channel, ALICE)
    first = export(channel, ALICE)
    kinds = Counter(record.WhichOneof("record") for record in first)
    assert set(kinds) == set(RECORD_KINDS)  # every kind of record is exercised

    erase(channel, ALICE)
    response = load(channel, ALICE, first)
    second = export(channel, ALICE)

    # The consent decision and the switch survived the erasure: they stand,
    # the export's records of them are not applied (and are equal anyway).
    assert dict(response.loaded) == kinds | {"consent": 0, "memory_settings": 0}
    assert serialized(second) == serialized(first)
    assert _api_views(channel, ALICE) == before
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    lexical = memories.RecallMemories(mm.RecallMemoriesRequest(parent="users/alice", query="Lyon"))
    assert [hit.memory.name for hit in lexical] == ["users/alice/memories/home"]
    semantic = memories.RecallMemories(
        mm.RecallMemoriesRequest(
            parent="users/alice",
            query_embedding=mm.Embedding(model="test-3d", values=[0.25, -1.5, 3.0]),
            semantic=True,
        )
    )
    assert [hit.memory.text for hit in semantic] == ["Likes coffee Zqxjvalice"]


def test_an_export_is_in_a_deterministic_order(channel: grpc.Channel) -> None:
    populate(channel, ALICE, "Zqxjvalice")
    records = export(channel, ALICE)
    assert serialized(export(channel, ALICE)) == serialized(records)
    kinds = [record.WhichOneof("record") for record in records]
    sections = list(dict.fromkeys(kinds))
    assert sections == [
        "consent",
        "memory_settings",
        "conversation",
        "memory_state",
        "message",
        "compaction_checkpoint",
        "failed_run",
        "memory",
        "memory_version",
        "tombstone",
        "candidate",
        "event",
        "document",
        "checkpoint",
    ]
    assert kinds == sorted(kinds, key=sections.index)  # each kind in one run
    states = [r.memory_state.name for r in records if r.HasField("memory_state")]
    assert states == ["users/alice/conversations/c1/memoryState", "users/alice/memoryState"][::-1]
    messages = [
        (r.message.name.split("/")[3], r.message.position) for r in records if r.message.name
    ]
    assert messages == sorted(messages)
    checkpoints = [
        (r.compaction_checkpoint.conversation, r.compaction_checkpoint.covered)
        for r in records
        if r.HasField("compaction_checkpoint")
    ]
    # c1: two checkpoints; c2: one; c3: cleared after one, a marker covering nothing.
    assert [c for c, _ in checkpoints] == [
        "users/alice/conversations/c1",
        "users/alice/conversations/c1",
        "users/alice/conversations/c2",
        "users/alice/conversations/c3",
    ]
    assert checkpoints[-1][1] == 0
    documents = [r.document for r in records if r.HasField("document")]
    assert [d.key for d in documents] == ["plain", "vector", "hidden", "ttl"]  # first written
    assert list(documents[1].index.texts[0].embedding) == [0.5, -0.25]
    assert documents[2].HasField("index") and not documents[2].index.texts
    assert not documents[0].HasField("index") and documents[3].ttl.seconds == 86_400
    graph = [
        (r.checkpoint.thread_name[-2:], r.checkpoint.checkpoint_ns, r.checkpoint.checkpoint_id)
        for r in records
        if r.HasField("checkpoint")
    ]
    assert graph == [
        (t, ns, i) for t in ("t1", "t2") for ns, i in (("", "01"), ("", "02"), ("sub:1", "05"))
    ]


def test_an_unknown_user_exports_nothing(channel: grpc.Channel) -> None:
    assert export(channel, "nobody") == []


def test_an_import_goes_only_into_a_user_without_data(
    channel: grpc.Channel, database_url: str
) -> None:
    populate(channel, ALICE, "Zqxjvalice")
    records = export(channel, ALICE)
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    history.CreateConversation(cv.CreateConversationRequest(parent="users/bob"))
    before = user_digest(database_url, BOB)
    new_conversation = gv.ExportRecord()
    new_conversation.CopyFrom(next(r for r in records if r.HasField("conversation")))
    new_conversation.conversation.name = "users/bob/conversations/new"

    for target, loaded in ((ALICE, records), (BOB, [new_conversation])):
        failure = _import_failure(
            channel, [gv.ImportUserDataRequest(parent=f"users/{target}", record=r) for r in loaded]
        )
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "IMPORT_TARGET_NOT_EMPTY",
        )
        assert failure.metadata["parent"] == f"users/{target}"
    assert user_digest(database_url, BOB) == before
    assert serialized(export(channel, ALICE)) == serialized(records)


def _import_failure(channel: grpc.Channel, requests: list[gv.ImportUserDataRequest]) -> Any:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    return rpc_failure(stub.ImportUserData, iter(requests))


def test_invalid_records_are_refused_by_their_place_and_nothing_is_loaded(
    channel: grpc.Channel, database_url: str
) -> None:
    populate(channel, ALICE, "Zqxjvalice")
    records = export(channel, ALICE)
    erase(channel, ALICE)
    erased = user_digest(database_url, ALICE)  # the ERASE change and counter, the decision
    index = {
        kind: i for i, kind in reversed(list(enumerate(r.WhichOneof("record") for r in records)))
    }
    broken = [gv.ExportRecord() for _ in records]
    for copy, record in zip(broken, records, strict=True):
        copy.CopyFrom(record)
    message, memory = index["message"], index["memory"]
    broken[message].message.position = 7
    broken[memory].memory.text = ""
    broken[index["tombstone"]].tombstone.name = "users/bob/memories/home"
    broken[index["event"]].event.ClearField("create_time")
    broken[index["failed_run"]].failed_run.messages[0].message_json = "{not json"
    checkpoint = index["compaction_checkpoint"]
    broken[checkpoint].compaction_checkpoint.revision = encode_revision(2**40, 1)  # no INTERNAL
    requests = [gv.ImportUserDataRequest(parent="users/alice", record=r) for r in broken]
    requests.append(gv.ImportUserDataRequest(parent="users/bob", record=records[memory]))

    failure = _import_failure(channel, requests)

    assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
    fields = set(failure.fields)
    last = len(broken)
    assert {
        f"records[{message}].message.position",
        f"records[{memory}].memory.text",
        f"records[{index['tombstone']}].tombstone.name",
        f"records[{index['event']}].event.create_time",
        f"records[{index['failed_run']}].failed_run.messages[0].message_json",
        f"records[{checkpoint}].compaction_checkpoint.revision",
        f"records[{last}].parent",
        f"records[{last}].memory.name",  # the same entry twice
    } <= fields, fields
    assert export(channel, ALICE) == _decision(records)  # kept by the erasure, nothing more
    assert user_digest(database_url, ALICE) == erased


def test_records_that_do_not_fit_together_are_refused(channel: grpc.Channel) -> None:
    populate(channel, ALICE, "Zqxjvalice")
    records = export(channel, ALICE)
    erase(channel, ALICE)
    kinds = [r.WhichOneof("record") for r in records]
    without_conversations = [r for r, k in zip(records, kinds, strict=True) if k != "conversation"]
    failure = _import_failure(
        channel,
        [gv.ImportUserDataRequest(parent="users/alice", record=r) for r in without_conversations],
    )
    assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
    problems = {field.split(".", 1)[1]: problem for field, problem in failure.violations}
    assert "message.name" in problems and "names conversation" in problems["message.name"]
    assert "compaction_checkpoint.conversation" in problems
    assert export(channel, ALICE) == _decision(records)  # kept by the erasure, nothing more


def test_an_import_needs_a_parent_and_the_same_one_throughout(channel: grpc.Channel) -> None:
    failure = _import_failure(channel, [])
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
    failure = _import_failure(channel, [gv.ImportUserDataRequest(parent="users/")])
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
    empty = gv.ImportUserDataRequest(parent="users/alice", record=gv.ExportRecord())
    failure = _import_failure(channel, [empty])
    assert failure.fields == ("records[0].record",)


def test_a_parent_without_records_imports_nothing(channel: grpc.Channel) -> None:
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    response = stub.ImportUserData(
        iter([gv.ImportUserDataRequest(parent="users/alice")]), timeout=TIMEOUT_S
    )
    assert dict(response.loaded) == {}
    assert export(channel, ALICE) == []
    erased = dict(erase(channel, ALICE).deleted_rows)
    assert erased.pop("users") == 1 and set(erased.values()) == {0}  # only the user's row
