"""Conversation calls (``mnemo.v1.ConversationService``): create, read, list, update, delete.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import field_mask_pb2, struct_pb2

from mnemo.client._calls import Page, PagedCall, Rpc, UnaryCall
from mnemo.client._names import conversation_name, user_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1.conversations_pb2_grpc import ConversationServiceStub


def rpc(method: str) -> Rpc:
    """The ``ConversationService`` RPC named ``method``."""
    return Rpc(ConversationServiceStub, method)


def struct(values: Mapping[str, Any] | None) -> struct_pb2.Struct | None:
    """A ``google.protobuf.Struct`` of JSON-like ``values``; ``None`` stays unset."""
    if values is None:
        return None
    result = struct_pb2.Struct()
    result.update(values)
    return result


def _conversation(response: Any) -> cv.Conversation:
    conversation: cv.Conversation = response.conversation
    return conversation


def _conversations_page(response: cv.ListConversationsResponse) -> Page[cv.Conversation]:
    return Page(list(response.conversations), response.next_page_token)


def _nothing(response: cv.DeleteConversationResponse) -> None:
    return None


def create_conversation(
    user: str,
    conversation_id: str = "",
    *,
    metadata: Mapping[str, Any] | None = None,
    temporary: bool = False,
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[cv.CreateConversationRequest, cv.Conversation]:
    """Create a conversation; the server picks the id when ``conversation_id`` is empty.

    ``metadata`` is any JSON object. ``temporary`` can only be chosen here. A
    fresh ``request_id`` is generated unless given, so a retried call returns
    the first result instead of ``AlreadyExistsError``; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id or metadata (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
        AlreadyExistsError: ``conversation_id`` is taken.
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = cv.CreateConversationRequest(
        parent=user_name(user),
        conversation_id=conversation_id,
        conversation=cv.Conversation(metadata=struct(metadata), temporary=temporary),
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("CreateConversation"), request, _conversation, timeout)


def get_conversation(
    user: str, conversation: str, *, timeout: float | None = None
) -> UnaryCall[cv.GetConversationRequest, cv.Conversation]:
    """Read one conversation (metadata, times, message count, etag).

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
        NotFoundError: no such conversation.
    """
    request = cv.GetConversationRequest(name=conversation_name(user, conversation))
    return UnaryCall(rpc("GetConversation"), request, _conversation, timeout)


def list_conversations_page(
    user: str, *, page_size: int = 0, page_token: str = "", timeout: float | None = None
) -> UnaryCall[cv.ListConversationsRequest, Page[cv.Conversation]]:
    """One page of the user's conversations, most recently updated first.

    Returns ``(items, next_page_token)``; pass the token back for the next
    page, it is empty on the last one. ``page_size`` 0 means the server default.

    Raises:
        InvalidArgumentError: a malformed user id, a negative page size or a
            foreign page token (``INVALID_NAME``, ``INVALID_FIELD``,
            ``INVALID_PAGE_TOKEN``).
    """
    request = cv.ListConversationsRequest(
        parent=user_name(user), page_size=page_size, page_token=page_token
    )
    return UnaryCall(rpc("ListConversations"), request, _conversations_page, timeout)


def list_conversations(
    user: str, *, page_size: int = 0, timeout: float | None = None
) -> PagedCall[cv.Conversation]:
    """Iterate over all the user's conversations, most recently updated first.

    Pages of ``page_size`` are fetched as the iteration goes, each with its own
    deadline. Errors are raised by the iteration.

    Raises:
        InvalidArgumentError: a malformed user id or a negative page size.
    """
    return PagedCall(
        lambda token: list_conversations_page(
            user, page_size=page_size, page_token=token, timeout=timeout
        )
    )


def update_conversation_metadata(
    user: str,
    conversation: str,
    metadata: Mapping[str, Any],
    *,
    etag: str = "",
    timeout: float | None = None,
) -> UnaryCall[cv.UpdateConversationRequest, cv.Conversation]:
    """Replace a conversation's metadata (a JSON object); returns the updated conversation.

    Raises:
        InvalidArgumentError: a malformed id or metadata (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
        NotFoundError: no such conversation.
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    request = cv.UpdateConversationRequest(
        conversation=cv.Conversation(
            name=conversation_name(user, conversation), metadata=struct(metadata), etag=etag
        ),
        update_mask=field_mask_pb2.FieldMask(paths=["metadata"]),
    )
    return UnaryCall(rpc("UpdateConversation"), request, _conversation, timeout)


def delete_conversation(
    user: str, conversation: str, *, etag: str = "", timeout: float | None = None
) -> UnaryCall[cv.DeleteConversationRequest, None]:
    """Delete a conversation with its history, failed runs, checkpoints and working memory.

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
        NotFoundError: no such conversation.
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    request = cv.DeleteConversationRequest(name=conversation_name(user, conversation), etag=etag)
    return UnaryCall(rpc("DeleteConversation"), request, _nothing, timeout)
