"""ConversationService: conversations (Anvia's inspector: list and get)."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import field_mask_pb2, struct_pb2

from mnemo.v1 import conversations_pb2 as cv
from tests.api.history import Stub, append
from tests.support.rpc_errors import rpc_failure


def _struct(**values: Any) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(values)
    return result


def _create(stub: Stub, conversation_id: str = "", **kwargs: Any) -> cv.Conversation:
    request = cv.CreateConversationRequest(
        parent="users/u1", conversation_id=conversation_id, **kwargs
    )
    conversation: cv.Conversation = stub.CreateConversation(request).conversation
    return conversation


def test_create_and_get(conversations: Stub) -> None:
    created = _create(
        conversations,
        "thread_123",
        conversation=cv.Conversation(metadata=_struct(title="Plans", n=2, tags=["a", "b"])),
    )
    assert created.name == "users/u1/conversations/thread_123"
    assert created.HasField("create_time") and created.HasField("update_time")
    assert created.message_count == 0 and created.etag
    assert not created.temporary and not created.HasField("expire_time")
    got = conversations.GetConversation(cv.GetConversationRequest(name=created.name))
    assert got.conversation == created
    assert dict(got.conversation.metadata) == {"title": "Plans", "n": 2.0, "tags": ["a", "b"]}


def test_generated_id_temporary_and_already_exists(conversations: Stub) -> None:
    generated = _create(conversations, conversation=cv.Conversation(temporary=True))
    assert generated.name.startswith("users/u1/conversations/")
    assert generated.temporary and generated.HasField("expire_time")
    assert generated.expire_time.seconds > generated.create_time.seconds
    another = _create(conversations)
    assert another.name != generated.name
    _create(conversations, "c1")
    failure = rpc_failure(
        conversations.CreateConversation,
        cv.CreateConversationRequest(parent="users/u1", conversation_id="c1"),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS")


def test_create_with_request_id_is_idempotent_even_with_a_generated_id(conversations: Stub) -> None:
    request = cv.CreateConversationRequest(parent="users/u1", request_id="create-1")
    first = conversations.CreateConversation(request).conversation
    assert conversations.CreateConversation(request).conversation == first
    listed = conversations.ListConversations(cv.ListConversationsRequest(parent="users/u1"))
    assert [c.name for c in listed.conversations] == [first.name]


def test_get_missing_is_not_found(conversations: Stub) -> None:
    failure = rpc_failure(
        conversations.GetConversation, cv.GetConversationRequest(name="users/u1/conversations/nope")
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")


def test_message_count_and_update_time_follow_the_history(conversations: Stub) -> None:
    created = _create(conversations, "c1")
    append(conversations, created.name, "one", "two")
    got = conversations.GetConversation(cv.GetConversationRequest(name=created.name)).conversation
    assert got.message_count == 2
    assert got.etag != created.etag
    assert got.update_time.ToDatetime() >= created.update_time.ToDatetime()


def test_first_append_creates_the_conversation_with_metadata(conversations: Stub) -> None:
    name = "users/u1/conversations/implicit"
    append(conversations, name, "hi", metadata=_struct(source="anvia"))
    append(conversations, name, "again", metadata=_struct(source="ignored"))
    got = conversations.GetConversation(cv.GetConversationRequest(name=name)).conversation
    assert dict(got.metadata) == {"source": "anvia"}
    assert got.message_count == 2


def test_list_pages_most_recently_updated_first(conversations: Stub) -> None:
    for i in range(7):
        _create(conversations, f"c{i}")
    _create(conversations, "other0")
    append(conversations, "users/u1/conversations/c2", "bump")  # now the most recent
    conversations.CreateConversation(
        cv.CreateConversationRequest(parent="users/u2", conversation_id="elsewhere")
    )
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = conversations.ListConversations(
            cv.ListConversationsRequest(parent="users/u1", page_size=3, page_token=token)
        )
        assert len(page.conversations) <= 3
        seen.extend(c.name.rsplit("/", 1)[1] for c in page.conversations)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages >= 3
    assert seen[0] == "c2"
    assert sorted(seen) == sorted([f"c{i}" for i in range(7)] + ["other0"])
    assert len(seen) == len(set(seen))


def test_a_page_token_for_another_parent_is_invalid(conversations: Stub) -> None:
    for i in range(3):
        _create(conversations, f"c{i}")
    page = conversations.ListConversations(
        cv.ListConversationsRequest(parent="users/u1", page_size=1)
    )
    assert page.next_page_token
    failure = rpc_failure(
        conversations.ListConversations,
        cv.ListConversationsRequest(parent="users/u2", page_token=page.next_page_token),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )
    assert failure.fields == ("page_token",)
    failure = rpc_failure(
        conversations.ListMessages,
        cv.ListMessagesRequest(parent="users/u1/conversations/c0", page_token=page.next_page_token),
    )
    assert failure.reason == "INVALID_PAGE_TOKEN"


def test_update_metadata_with_etag(conversations: Stub) -> None:
    created = _create(conversations, "c1", conversation=cv.Conversation(metadata=_struct(a=1)))
    updated = conversations.UpdateConversation(
        cv.UpdateConversationRequest(
            conversation=cv.Conversation(
                name=created.name, metadata=_struct(b="x"), etag=created.etag
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["metadata"]),
        )
    ).conversation
    assert dict(updated.metadata) == {"b": "x"} and updated.etag != created.etag
    failure = rpc_failure(
        conversations.UpdateConversation,
        cv.UpdateConversationRequest(
            conversation=cv.Conversation(name=created.name, metadata=_struct(), etag=created.etag)
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    got = conversations.GetConversation(cv.GetConversationRequest(name=created.name))
    assert got.conversation == updated


def test_delete_with_etag(conversations: Stub) -> None:
    created = _create(conversations, "c1")
    append(conversations, created.name, "x")
    failure = rpc_failure(
        conversations.DeleteConversation,
        cv.DeleteConversationRequest(name=created.name, etag=created.etag),
    )
    assert failure.reason == "ETAG_MISMATCH"
    conversations.DeleteConversation(cv.DeleteConversationRequest(name=created.name))
    failure = rpc_failure(
        conversations.GetConversation, cv.GetConversationRequest(name=created.name)
    )
    assert failure.code is grpc.StatusCode.NOT_FOUND
    failure = rpc_failure(
        conversations.DeleteConversation, cv.DeleteConversationRequest(name=created.name)
    )
    assert failure.code is grpc.StatusCode.NOT_FOUND
