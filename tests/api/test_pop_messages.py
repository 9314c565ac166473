"""ConversationService: GetMessage and PopMessages (the tail of the canonical
history), on both stores, through the change feed too."""

from __future__ import annotations

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import sync_pb2_grpc
from tests.api.history import Stub, all_messages, append, contents, message
from tests.support.rpc_errors import rpc_failure

C1 = "users/u1/conversations/c1"


def pop(stub: Stub, count: int, **kwargs: object) -> cv.PopMessagesResponse:
    response: cv.PopMessagesResponse = stub.PopMessages(
        cv.PopMessagesRequest(conversation=C1, count=count, **kwargs)
    )
    return response


def test_pop_removes_the_tail_and_positions_are_reused(conversations: Stub) -> None:
    append(conversations, C1, "a", "b", "c", "d")
    popped = pop(conversations, 2)
    assert contents(list(popped.messages)) == ["c", "d"]
    assert [m.name for m in popped.messages] == [f"{C1}/messages/2", f"{C1}/messages/3"]
    assert popped.conversation.message_count == 2
    assert contents(all_messages(conversations, C1)) == ["a", "b"]
    again = append(conversations, C1, "e")
    assert again.messages[0].position == 2
    assert contents(all_messages(conversations, C1)) == ["a", "b", "e"]


def test_pop_of_more_than_there_is_empties_and_an_empty_pop_changes_nothing(
    conversations: Stub,
) -> None:
    append(conversations, C1, "a", "b")
    assert contents(list(pop(conversations, 5).messages)) == ["a", "b"]
    nothing = pop(conversations, 1)
    assert list(nothing.messages) == [] and nothing.change_cursor == 0
    assert nothing.conversation.message_count == 0


def test_get_message_by_name_and_not_found_after_a_pop(conversations: Stub) -> None:
    append(conversations, C1, "a", "b")
    got = conversations.GetMessage(cv.GetMessageRequest(name=f"{C1}/messages/1")).message
    assert (got.position, got.name, got.text) == (1, f"{C1}/messages/1", "b")
    pop(conversations, 1)
    for name in (f"{C1}/messages/1", "users/u1/conversations/nope/messages/0"):
        failure = rpc_failure(conversations.GetMessage, cv.GetMessageRequest(name=name))
        assert failure.code == grpc.StatusCode.NOT_FOUND
    for name in (f"{C1}/messages/01", f"{C1}/messages/-1", f"{C1}/messages/x", C1):
        failure = rpc_failure(conversations.GetMessage, cv.GetMessageRequest(name=name))
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")


def test_expected_next_position_guards_the_pop(conversations: Stub) -> None:
    append(conversations, C1, "a", "b", "c")
    failure = rpc_failure(
        conversations.PopMessages,
        cv.PopMessagesRequest(conversation=C1, count=1, expected_next_position=2),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "POSITION_MISMATCH")
    assert failure.metadata == {"expected_position": "2", "next_position": "3"}
    assert contents(all_messages(conversations, C1)) == ["a", "b", "c"]
    assert contents(list(pop(conversations, 1, expected_next_position=3).messages)) == ["c"]


def test_a_retried_pop_returns_the_first_result_and_pops_once(conversations: Stub) -> None:
    append(conversations, C1, "a", "b", "c")
    first = pop(conversations, 1, request_id="pop-1")
    retry = pop(conversations, 1, request_id="pop-1")
    assert retry == first
    assert contents(all_messages(conversations, C1)) == ["a", "b"]
    failure = rpc_failure(
        conversations.PopMessages,
        cv.PopMessagesRequest(conversation=C1, count=2, request_id="pop-1"),
    )
    assert failure.reason == "REQUEST_ID_REUSED"


def test_bad_requests_are_refused_with_their_fields(conversations: Stub) -> None:
    append(conversations, C1, "a")
    for count in (0, -1, 1001):
        failure = rpc_failure(
            conversations.PopMessages, cv.PopMessagesRequest(conversation=C1, count=count)
        )
        assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [field for field, _ in failure.violations] == ["count"]
    failure = rpc_failure(
        conversations.PopMessages,
        cv.PopMessagesRequest(conversation="users/u1/conversations/nope", count=1),
    )
    assert failure.code == grpc.StatusCode.NOT_FOUND
    assert contents(all_messages(conversations, C1)) == ["a"]


def test_a_pop_into_a_compacted_prefix_is_refused(conversations: Stub) -> None:
    append(conversations, C1, *[f"m{i}" for i in range(6)])
    snapshot = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    conversations.ReplaceHistoryPrefix(
        cv.ReplaceHistoryPrefixRequest(
            conversation=C1,
            revision=snapshot.revision,
            message_count=4,
            replacement=[message("summary of m0..m3", role="system")],
        )
    )
    failure = rpc_failure(
        conversations.PopMessages, cv.PopMessagesRequest(conversation=C1, count=3)
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "HISTORY_COMPACTED",
    )
    assert failure.metadata == {"compacted_messages": "4", "next_position": "6"}
    assert contents(list(pop(conversations, 2).messages)) == ["m4", "m5"]
    view = conversations.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=C1))
    assert contents(list(view.messages)) == ["summary of m0..m3"]


def test_the_feed_deletes_the_popped_messages_and_strips_their_text(
    conversations: Stub, channel: grpc.Channel
) -> None:
    sync = sync_pb2_grpc.SyncServiceStub(channel)
    append(conversations, C1, "a", "secret")
    popped = pop(conversations, 1)
    changes = list(sync.ListChanges(sy.ListChangesRequest(parent="users/u1")).changes)
    assert changes[-1].cursor == popped.change_cursor
    tail = [(c.operation, c.resource_name) for c in changes[-2:]]
    assert tail == [
        (sy.CHANGE_OPERATION_UPSERT, C1),
        (sy.CHANGE_OPERATION_DELETE, f"{C1}/messages/1"),
    ]
    assert changes[-2].conversation.message_count == 1
    earlier = [c for c in changes[:-2] if c.resource_name == f"{C1}/messages/1"]
    assert len(earlier) == 1 and not earlier[0].HasField("message")
    kept = [c for c in changes if c.resource_name == f"{C1}/messages/0"]
    assert kept[0].message.text == "a"
