"""Invalid input of every kind: INVALID_ARGUMENT with a reason and field violations.

One table, tried against a real server: every row must fail with
INVALID_ARGUMENT, exactly one ErrorInfo (domain mnemo.v1) with the expected
reason, and a BadRequest naming the expected field. Never UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import field_mask_pb2, struct_pb2, timestamp_pb2
from google.protobuf.message import Message

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.history import Stub, message
from tests.support.rpc_errors import rpc_failure

C1 = "users/u1/conversations/c1"
STATE = "users/u1/memoryState"
OK_MESSAGE = message("fine")
MEMORY = "users/u1/memories/m1"
CANDIDATE = "users/u1/memoryCandidates/k1"


def _metadata_of(size: int) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update({"blob": "x" * size})
    return result


def _messages(*jsons: str) -> list[cv.HistoryMessage]:
    return [cv.HistoryMessage(message_json=j) for j in jsons]


def _save(**memory: Any) -> mm.CreateMemoryRequest:
    """CreateMemory for users/u1 of an entry with ``memory``'s fields (text "fact" unless given)."""
    return mm.CreateMemoryRequest(
        parent="users/u1", memory=mm.Memory(**({"text": "fact"} | memory))
    )


def _vector(*values: float, model: str = "m") -> mm.Embedding:
    return mm.Embedding(model=model, values=values)


@dataclass(frozen=True)
class Case:
    rpc: str
    request: Message
    reason: str
    field: str

    @property
    def label(self) -> str:
        return f"{self.rpc} -> {self.reason} on {self.field}"


CASES: list[Case] = [
    # --- names
    Case("GetMemoryState", wm.GetMemoryStateRequest(), "INVALID_NAME", "name"),
    Case("GetMemoryState", wm.GetMemoryStateRequest(name=C1), "INVALID_NAME", "name"),
    Case(
        "GetMemoryState",
        wm.GetMemoryStateRequest(name="users/a b/memoryState"),
        "INVALID_NAME",
        "name",
    ),
    Case("SaveMemoryState", wm.SaveMemoryStateRequest(), "INVALID_NAME", "memory_state.name"),
    Case(
        "ClearMemoryState",
        wm.ClearMemoryStateRequest(name="users//memoryState"),
        "INVALID_NAME",
        "name",
    ),
    Case("CreateConversation", cv.CreateConversationRequest(), "INVALID_NAME", "parent"),
    Case("CreateConversation", cv.CreateConversationRequest(parent=C1), "INVALID_NAME", "parent"),
    Case("GetConversation", cv.GetConversationRequest(name="users/u1"), "INVALID_NAME", "name"),
    Case("GetConversation", cv.GetConversationRequest(name=C1 + "/"), "INVALID_NAME", "name"),
    Case("ListConversations", cv.ListConversationsRequest(parent="u1"), "INVALID_NAME", "parent"),
    Case("UpdateConversation", cv.UpdateConversationRequest(), "INVALID_NAME", "conversation.name"),
    Case(
        "DeleteConversation",
        cv.DeleteConversationRequest(name="users/u1/conversations/.x"),
        "INVALID_NAME",
        "name",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(messages=[OK_MESSAGE]),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "ListMessages",
        cv.ListMessagesRequest(parent="users/u1/memoryState"),
        "INVALID_NAME",
        "parent",
    ),
    Case("StreamMessages", cv.StreamMessagesRequest(parent="c1"), "INVALID_NAME", "parent"),
    Case(
        "ClearMessages",
        cv.ClearMessagesRequest(conversation="users/u1/conversations/" + "c" * 129),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(run_id="r", error=cv.RunError(message="m")),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "ListFailedRuns",
        cv.ListFailedRunsRequest(parent="users/u1/conversations"),
        "INVALID_NAME",
        "parent",
    ),
    Case(
        "SnapshotHistory",
        cv.SnapshotHistoryRequest(conversation=""),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "ReplaceHistoryPrefix",
        cv.ReplaceHistoryPrefixRequest(revision="x", message_count=1),
        "INVALID_NAME",
        "conversation",
    ),
    # --- empty required fields
    Case(
        "RememberExchange", wm.RememberExchangeRequest(name=STATE), "INVALID_FIELD", "exchange.ask"
    ),
    Case(
        "SaveMemoryState",
        wm.SaveMemoryStateRequest(
            memory_state=wm.MemoryState(name=STATE, recent=[wm.Exchange(answer="a")])
        ),
        "INVALID_FIELD",
        "memory_state.recent[0].ask",
    ),
    Case("AppendMessages", cv.AppendMessagesRequest(conversation=C1), "INVALID_FIELD", "messages"),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=[cv.HistoryMessage()]),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(conversation=C1, error=cv.RunError(message="m")),
        "INVALID_FIELD",
        "run_id",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(conversation=C1, run_id="r"),
        "INVALID_FIELD",
        "error.message",
    ),
    Case(
        "ReplaceHistoryPrefix",
        cv.ReplaceHistoryPrefixRequest(conversation=C1, message_count=1),
        "INVALID_FIELD",
        "revision",
    ),
    # --- oversized fields
    Case(
        "SaveMemoryState",
        wm.SaveMemoryStateRequest(memory_state=wm.MemoryState(name=STATE, summary="x" * 16_385)),
        "FIELD_TOO_LARGE",
        "memory_state.summary",
    ),
    Case(
        "SaveMemoryState",
        wm.SaveMemoryStateRequest(
            memory_state=wm.MemoryState(name=STATE, recent=[wm.Exchange(ask="a")] * 51)
        ),
        "FIELD_TOO_LARGE",
        "memory_state.recent",
    ),
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask="é" * 40_000)),
        "FIELD_TOO_LARGE",
        "exchange.ask",
    ),
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask="a"), request_id="r" * 129),
        "FIELD_TOO_LARGE",
        "request_id",
    ),
    Case(
        "CreateConversation",
        cv.CreateConversationRequest(
            parent="users/u1", conversation=cv.Conversation(metadata=_metadata_of(20_000))
        ),
        "FIELD_TOO_LARGE",
        "conversation.metadata",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=[OK_MESSAGE] * 501),
        "FIELD_TOO_LARGE",
        "messages",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=_messages('{"role":"user","content":"' + "x" * 262_144 + '"}')
        ),
        "FIELD_TOO_LARGE",
        "messages[0].message_json",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=[OK_MESSAGE], run_id="r" * 129),
        "FIELD_TOO_LARGE",
        "run_id",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=[OK_MESSAGE], metadata=_metadata_of(20_000)
        ),
        "FIELD_TOO_LARGE",
        "metadata",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(
            conversation=C1, run_id="r", error=cv.RunError(message="m", code="c" * 129)
        ),
        "FIELD_TOO_LARGE",
        "error.code",
    ),
    # --- malformed values
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask="a\x00b")),
        "INVALID_FIELD",
        "exchange.ask",
    ),
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(
            name=STATE, exchange=wm.Exchange(ask="a", at=timestamp_pb2.Timestamp(seconds=10**12))
        ),
        "INVALID_FIELD",
        "exchange.at",
    ),
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask="a"), keep_recent=51),
        "INVALID_FIELD",
        "keep_recent",
    ),
    Case(
        "RememberExchange",
        wm.RememberExchangeRequest(name=STATE, exchange=wm.Exchange(ask="a"), keep_recent=-1),
        "INVALID_FIELD",
        "keep_recent",
    ),
    Case(
        "CreateConversation",
        cv.CreateConversationRequest(parent="users/u1", conversation_id="-starts-badly"),
        "INVALID_FIELD",
        "conversation_id",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=[OK_MESSAGE], expected_position=-1),
        "INVALID_FIELD",
        "expected_position",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=[OK_MESSAGE], turn=-1),
        "INVALID_FIELD",
        "turn",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(
            conversation=C1, run_id="r", error=cv.RunError(message="m", details_json="{nope")
        ),
        "INVALID_FIELD",
        "error.details_json",
    ),
    Case(
        "ReplaceHistoryPrefix",
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1, revision="not-a-revision!", message_count=1
        ),
        "INVALID_FIELD",
        "revision",
    ),
    Case(
        "ReplaceHistoryPrefix",
        cv.ReplaceHistoryPrefixRequest(conversation=C1, revision="cjE6MDow", message_count=0),
        "INVALID_FIELD",
        "message_count",
    ),
    # --- bad message JSON
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(conversation=C1, messages=_messages("{not json")),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=[OK_MESSAGE, *_messages('"just a string"')]
        ),
        "INVALID_MESSAGE",
        "messages[1].message_json",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=_messages('{"role":"wizard","content":"x"}')
        ),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=_messages('{"role":"user","content":[{"type":"text"}]}')
        ),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "AppendMessages",
        cv.AppendMessagesRequest(
            conversation=C1, messages=_messages('{"role":"user","content":Infinity}')
        ),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "RecordFailedRun",
        cv.RecordFailedRunRequest(
            conversation=C1, run_id="r", error=cv.RunError(message="m"), messages=_messages("[]")
        ),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "ReplaceHistoryPrefix",
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1, revision="cjE6MDow", message_count=1, replacement=_messages("{}")
        ),
        "INVALID_MESSAGE",
        "replacement[0].message_json",
    ),
    # --- page sizes and tokens
    Case(
        "ListConversations",
        cv.ListConversationsRequest(parent="users/u1", page_size=-1),
        "INVALID_FIELD",
        "page_size",
    ),
    Case(
        "ListMessages",
        cv.ListMessagesRequest(parent=C1, page_size=-5),
        "INVALID_FIELD",
        "page_size",
    ),
    Case(
        "ListMessages",
        cv.ListMessagesRequest(parent=C1, start_position=-1),
        "INVALID_FIELD",
        "start_position",
    ),
    Case(
        "StreamMessages",
        cv.StreamMessagesRequest(parent=C1, batch_size=-1),
        "INVALID_FIELD",
        "batch_size",
    ),
    Case(
        "StreamMessages",
        cv.StreamMessagesRequest(parent=C1, start_position=-3),
        "INVALID_FIELD",
        "start_position",
    ),
    Case(
        "ListFailedRuns",
        cv.ListFailedRunsRequest(parent=C1, page_size=-1),
        "INVALID_FIELD",
        "page_size",
    ),
    Case(
        "ListConversations",
        cv.ListConversationsRequest(parent="users/u1", page_token="garbage"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    Case(
        "ListMessages",
        cv.ListMessagesRequest(parent=C1, page_token="eyJ2IjoxLCJrIjpbMV19"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    Case(
        "ListFailedRuns",
        cv.ListFailedRunsRequest(parent=C1, page_token="%%%"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    # --- field masks
    Case(
        "UpdateConversation",
        cv.UpdateConversationRequest(
            conversation=cv.Conversation(name=C1),
            update_mask=field_mask_pb2.FieldMask(paths=["temporary"]),
        ),
        "INVALID_FIELD",
        "update_mask",
    ),
    Case(
        "UpdateConversation",
        cv.UpdateConversationRequest(
            conversation=cv.Conversation(name=C1),
            update_mask=field_mask_pb2.FieldMask(paths=["metadata", "name"]),
        ),
        "INVALID_FIELD",
        "update_mask",
    ),
    # --- long-term memory: names
    Case(
        "CreateMemory", mm.CreateMemoryRequest(memory=mm.Memory(text="x")), "INVALID_NAME", "parent"
    ),
    Case("GetMemory", mm.GetMemoryRequest(name="users/u1/memories/"), "INVALID_NAME", "name"),
    Case("GetMemory", mm.GetMemoryRequest(name=C1), "INVALID_NAME", "name"),
    Case("ListMemories", mm.ListMemoriesRequest(parent=MEMORY), "INVALID_NAME", "parent"),
    Case(
        "UpdateMemory",
        mm.UpdateMemoryRequest(memory=mm.Memory(text="x")),
        "INVALID_NAME",
        "memory.name",
    ),
    Case("DeleteMemory", mm.DeleteMemoryRequest(name="memories/m1"), "INVALID_NAME", "name"),
    Case(
        "ListMemoryVersions",
        mm.ListMemoryVersionsRequest(name="users/u1/memories/-x"),
        "INVALID_NAME",
        "name",
    ),
    Case("RecallMemories", mm.RecallMemoriesRequest(query="tea"), "INVALID_NAME", "parent"),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(parent="users/u1", query="tea", conversation="c1"),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "BuildContext", mm.BuildContextRequest(parent="u1", query="tea"), "INVALID_NAME", "parent"
    ),
    Case(
        "ExtractMemories",
        mm.ExtractMemoriesRequest(
            parent="users/u1", conversation="users/u2/conversations/c1", messages=[OK_MESSAGE]
        ),
        "INVALID_NAME",
        "conversation",
    ),
    Case(
        "ApproveMemoryCandidate",
        mm.ApproveMemoryCandidateRequest(name=MEMORY),
        "INVALID_NAME",
        "name",
    ),
    Case(
        "RejectMemoryCandidate",
        mm.RejectMemoryCandidateRequest(name="users/u1/memoryCandidates"),
        "INVALID_NAME",
        "name",
    ),
    Case(
        "CreateMemory",
        _save(scope=mm.MEMORY_SCOPE_CONVERSATION, conversation="users/u2/conversations/c1"),
        "INVALID_NAME",
        "memory.conversation",
    ),
    # --- long-term memory: required, malformed and out-of-range fields
    Case("CreateMemory", _save(text=""), "INVALID_FIELD", "memory.text"),
    Case("CreateMemory", _save(text="  \n "), "INVALID_FIELD", "memory.text"),
    Case("CreateMemory", _save(text="a\x00b"), "INVALID_FIELD", "memory.text"),
    Case("CreateMemory", _save(key="a\nb"), "INVALID_FIELD", "memory.key"),
    Case("CreateMemory", _save(scope=7), "INVALID_FIELD", "memory.scope"),
    Case("CreateMemory", _save(source=9), "INVALID_FIELD", "memory.source"),
    Case(
        "CreateMemory",
        _save(scope=mm.MEMORY_SCOPE_CONVERSATION),
        "INVALID_FIELD",
        "memory.conversation",
    ),
    Case("CreateMemory", _save(conversation=C1), "INVALID_FIELD", "memory.conversation"),
    Case("CreateMemory", _save(metadata={"": "v"}), "INVALID_FIELD", "memory.metadata"),
    Case(
        "CreateMemory", _save(embedding=mm.Embedding()), "INVALID_FIELD", "memory.embedding.model"
    ),
    Case(
        "CreateMemory",
        _save(embedding=_vector(model="m")),
        "INVALID_FIELD",
        "memory.embedding.values",
    ),
    Case(
        "CreateMemory",
        _save(embedding=_vector(1.0, float("nan"))),
        "INVALID_FIELD",
        "memory.embedding.values",
    ),
    Case(
        "CreateMemory",
        _save(embedding=_vector(0.0, 0.0)),
        "INVALID_FIELD",
        "memory.embedding.values",
    ),
    Case(
        "CreateMemory",
        mm.CreateMemoryRequest(parent="users/u1", memory=mm.Memory(text="x"), memory_id="_bad"),
        "INVALID_FIELD",
        "memory_id",
    ),
    Case(
        "UpdateMemory",
        mm.UpdateMemoryRequest(
            memory=mm.Memory(name=MEMORY, text="x"),
            update_mask=field_mask_pb2.FieldMask(paths=["key"]),
        ),
        "INVALID_FIELD",
        "update_mask",
    ),
    Case(
        "UpdateMemory",
        mm.UpdateMemoryRequest(memory=mm.Memory(name=MEMORY)),
        "INVALID_FIELD",
        "memory.text",
    ),
    Case(
        "UpdateMemory",
        mm.UpdateMemoryRequest(
            memory=mm.Memory(name=MEMORY),
            update_mask=field_mask_pb2.FieldMask(paths=["embedding"]),
        ),
        "INVALID_FIELD",
        "memory.embedding.values",
    ),
    Case(
        "ListMemories",
        mm.ListMemoriesRequest(parent="users/u1", scope=mm.MEMORY_SCOPE_IDENTITY, conversation=C1),
        "INVALID_FIELD",
        "conversation",
    ),
    Case(
        "ListMemories",
        mm.ListMemoriesRequest(parent="users/u1", page_size=-1),
        "INVALID_FIELD",
        "page_size",
    ),
    Case(
        "ListMemories",
        mm.ListMemoriesRequest(parent="users/u1", page_token="garbage"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    Case(
        "ListMemoryVersions",
        mm.ListMemoryVersionsRequest(name=MEMORY, page_token="eyJ2IjoxLCJrIjpbMV19"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    Case("RecallMemories", mm.RecallMemoriesRequest(parent="users/u1"), "INVALID_FIELD", "query"),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(parent="users/u1", query="tea", max_results=101),
        "INVALID_FIELD",
        "max_results",
    ),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(parent="users/u1", query="tea", max_results=-1),
        "INVALID_FIELD",
        "max_results",
    ),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(parent="users/u1", query="tea", min_score=float("nan")),
        "INVALID_FIELD",
        "min_score",
    ),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(
            parent="users/u1", query="tea", scope=mm.RECALL_SCOPE_CONVERSATION
        ),
        "INVALID_FIELD",
        "conversation",
    ),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(
            parent="users/u1", query="tea", query_embedding=_vector(float("inf"))
        ),
        "INVALID_FIELD",
        "query_embedding.values",
    ),
    Case(
        "BuildContext",
        mm.BuildContextRequest(parent="users/u1", query="tea", max_entries=51),
        "INVALID_FIELD",
        "max_entries",
    ),
    Case(
        "BuildContext",
        mm.BuildContextRequest(parent="users/u1", query="tea", max_bytes=16_385),
        "INVALID_FIELD",
        "max_bytes",
    ),
    Case(
        "BuildContext",
        mm.BuildContextRequest(parent="users/u1", query="tea", max_bytes=-1),
        "INVALID_FIELD",
        "max_bytes",
    ),
    Case(
        "ExtractMemories", mm.ExtractMemoriesRequest(parent="users/u1"), "INVALID_FIELD", "messages"
    ),
    Case(
        "ExtractMemories",
        mm.ExtractMemoriesRequest(parent="users/u1", messages=[OK_MESSAGE], turn=-1),
        "INVALID_FIELD",
        "turn",
    ),
    Case(
        "ExtractMemories",
        mm.ExtractMemoriesRequest(parent="users/u1", messages=_messages('{"role":"robot"}')),
        "INVALID_MESSAGE",
        "messages[0].message_json",
    ),
    Case(
        "ProposeMemoryCandidates",
        mm.ProposeMemoryCandidatesRequest(parent="users/u1"),
        "INVALID_FIELD",
        "candidates",
    ),
    Case(
        "ProposeMemoryCandidates",
        mm.ProposeMemoryCandidatesRequest(
            parent="users/u1", candidates=[mm.MemoryCandidate(memory=mm.Memory())]
        ),
        "INVALID_FIELD",
        "candidates[0].memory.text",
    ),
    Case(
        "ProposeMemoryCandidates",
        mm.ProposeMemoryCandidatesRequest(
            parent="users/u1",
            candidates=[mm.MemoryCandidate(memory=mm.Memory(text="x"), turn=-1)],
        ),
        "INVALID_FIELD",
        "candidates[0].turn",
    ),
    Case(
        "ListMemoryCandidates",
        mm.ListMemoryCandidatesRequest(parent="users/u1", page_token="%%%"),
        "INVALID_PAGE_TOKEN",
        "page_token",
    ),
    # --- long-term memory: sizes
    Case("CreateMemory", _save(text="é" * 2049), "FIELD_TOO_LARGE", "memory.text"),
    Case("CreateMemory", _save(key="k" * 257), "FIELD_TOO_LARGE", "memory.key"),
    Case(
        "CreateMemory", _save(metadata={"blob": "v" * 4093}), "FIELD_TOO_LARGE", "memory.metadata"
    ),
    Case(
        "CreateMemory",
        _save(metadata={f"k{i}": "v" for i in range(33)}),
        "FIELD_TOO_LARGE",
        "memory.metadata",
    ),
    Case(
        "CreateMemory",
        _save(embedding=_vector(*([1.0] * 4097))),
        "FIELD_TOO_LARGE",
        "memory.embedding.values",
    ),
    Case(
        "CreateMemory",
        mm.CreateMemoryRequest(parent="users/u1", memory=mm.Memory(text="x"), request_id="r" * 129),
        "FIELD_TOO_LARGE",
        "request_id",
    ),
    Case(
        "RecallMemories",
        mm.RecallMemoriesRequest(parent="users/u1", query="q" * 65_537),
        "FIELD_TOO_LARGE",
        "query",
    ),
    Case(
        "ProposeMemoryCandidates",
        mm.ProposeMemoryCandidatesRequest(
            parent="users/u1", candidates=[mm.MemoryCandidate(memory=mm.Memory(text="x"))] * 101
        ),
        "FIELD_TOO_LARGE",
        "candidates",
    ),
]


def _caller(stubs: tuple[Any, ...], rpc: str) -> Callable[[Message], Any]:
    method = next(getattr(stub, rpc) for stub in stubs if hasattr(stub, rpc))
    if rpc in ("StreamMessages", "RecallMemories"):
        return lambda request: list(method(request))
    return lambda request: method(request)


def test_invalid_input_of_every_kind(
    working_memory: working_memory_pb2_grpc.WorkingMemoryServiceStub,
    conversations: Stub,
    memories: memories_pb2_grpc.MemoryServiceStub,
) -> None:
    # A conversation to exist, so that no case can pass for NOT_FOUND instead.
    conversations.AppendMessages(cv.AppendMessagesRequest(conversation=C1, messages=[OK_MESSAGE]))
    problems: list[str] = []
    for case in CASES:
        stubs = (working_memory, conversations, memories)
        failure = rpc_failure(_caller(stubs, case.rpc), case.request)
        got = f"{failure.code.name} {failure.reason} {failure.fields} ({failure.message})"
        if (
            failure.code is not grpc.StatusCode.INVALID_ARGUMENT
            or failure.reason != case.reason
            or case.field not in failure.fields
            or failure.domain != "mnemo.v1"
            or failure.error_infos != 1
        ):
            problems.append(f"{case.label}: got {got}")
    assert not problems, "\n".join(problems)


def test_a_malformed_name_says_which_characters_an_id_may_have(conversations: Stub) -> None:
    failure = rpc_failure(
        conversations.GetConversation,
        cv.GetConversationRequest(name="users/ada lovelace/conversations/c1"),
    )
    rule = "each id 1-128 characters of A-Z a-z 0-9 . _ ~ : - starting with a letter or digit"
    assert failure.reason == "INVALID_NAME" and rule in failure.message
    assert failure.violations == (
        ("name", f"must be a name like users/{{user}}/conversations/{{conversation}}, {rule}"),
    )


def test_every_problem_of_a_request_is_reported_at_once(conversations: Stub) -> None:
    request = cv.AppendMessagesRequest(
        conversation="users/u1/chats/c1",
        messages=_messages('{"role":"user","content":"ok"}', "{bad", '{"role":"user"}'),
        run_id="r" * 200,
        turn=-2,
        expected_position=-1,
    )
    failure = rpc_failure(conversations.AppendMessages, request)
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
    assert failure.reason == "INVALID_NAME"  # the first problem's reason
    assert failure.fields == (
        "conversation",
        "messages[1].message_json",
        "messages[2].message_json",
        "run_id",
        "turn",
        "expected_position",
    )
    assert failure.metadata["fields"] == ",".join(failure.fields)


def test_a_request_that_does_not_parse_is_invalid_argument(channel: grpc.Channel) -> None:
    # Field 1 (`conversation` / `name`) holding bytes that are not UTF-8.
    bad_utf8 = b"\x0a\x02\xff\xfe"
    for path in (
        "/mnemo.v1.ConversationService/AppendMessages",
        "/mnemo.v1.WorkingMemoryService/GetMemoryState",
    ):
        failure = rpc_failure(channel.unary_unary(path, None, None), bad_utf8, timeout=10)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
        assert failure.fields == ("request",)
    stream = channel.unary_stream("/mnemo.v1.ConversationService/StreamMessages", None, None)
    failure = rpc_failure(lambda: list(stream(bad_utf8, timeout=10)))
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
