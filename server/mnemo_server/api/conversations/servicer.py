"""ConversationService: validate, build the command, call the use case,
convert the result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

import grpc

from mnemo.v1 import conversations_pb2 as pb
from mnemo.v1 import conversations_pb2_grpc as pb_grpc
from mnemo_server.api import names, pagination
from mnemo_server.api.conversations import convert, requests
from mnemo_server.api.conversations.rules import RULES, compaction_named, revision_of
from mnemo_server.api.convert import expected_etag
from mnemo_server.api.idempotency import idempotency_of
from mnemo_server.api.validation import (
    Validator,
    check_fields,
    message_event_times,
    messages_of,
    user_of,
)
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.config import Settings
from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.conversations import (
    AppendMessages,
    ClearMessages,
    CreateConversation,
    DeleteConversation,
    PopMessages,
    PopResult,
    RecordFailedRun,
    ReplaceHistoryPrefix,
    UpdateConversation,
)
from mnemo_server.domain.models import AppendResult, ConversationKey, NewMessage
from mnemo_server.domain.usecases.conversations import Conversations, new_conversation_id
from mnemo_server.domain.usecases.writes import Writes

Context = grpc.aio.ServicerContext[Any, Any]
_UPDATABLE = ("metadata",)


R = TypeVar("R", pb.AppendMessagesResponse, pb.PopMessagesResponse)


def _messages_written(
    response: type[R], key: ConversationKey, written: Written[AppendResult] | Written[PopResult]
) -> R:
    """The response of a write that added or removed messages: those
    messages, the conversation after it, its change cursor."""
    return response(
        messages=convert.messages_to_proto(key, written.value.messages),
        conversation=convert.conversation_to_proto(written.value.conversation),
        change_cursor=written.change_cursor,
    )


CONVERSATIONS = pagination.Listing("ListConversations", pagination.CONVERSATIONS)
MESSAGES = pagination.Listing("ListMessages", pagination.MESSAGES)
FAILED_RUNS = pagination.Listing("ListFailedRuns", pagination.FAILED_RUNS)


class ConversationServicer(pb_grpc.ConversationServiceServicer):
    """The Anvia conversation history over gRPC."""

    def __init__(self, conversations: Conversations, writes: Writes, settings: Settings) -> None:
        self._conversations = conversations
        self._writes = writes
        self._settings = settings
        self._temporary_lifetime = settings.temporary_ttl_seconds * 1_000_000

    def _messages(
        self, v: Validator, values: Any, field: str, *, min_count: int = 0
    ) -> list[NewMessage]:
        return messages_of(v, values, field, self._settings, min_count=min_count)

    # ----------------------------------------------------------- conversations

    async def CreateConversation(
        self, request: pb.CreateConversationRequest, context: Context
    ) -> pb.CreateConversationResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        check_fields(v, request, RULES)
        metadata = requests.metadata_of(v, request.conversation, "conversation.metadata")
        v.raise_if_invalid()
        temporary = request.conversation.temporary
        written = await self._writes(
            CreateConversation(
                caller=caller_of(scope),
                user_id=user_id,
                conversation_id=request.conversation_id or new_conversation_id(),
                metadata=metadata,
                temporary=temporary,
                lifetime_micros=self._temporary_lifetime if temporary else None,
                idempotency=idempotency_of(request, "CreateConversation"),
            )
        )
        return pb.CreateConversationResponse(
            conversation=convert.conversation_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    async def GetConversation(
        self, request: pb.GetConversationRequest, context: Context
    ) -> pb.GetConversationResponse:
        key = names.parse_conversation(request.name, "name", current_scope())
        conversation = await self._conversations.get(key)
        return pb.GetConversationResponse(conversation=convert.conversation_to_proto(conversation))

    async def ListConversations(
        self, request: pb.ListConversationsRequest, context: Context
    ) -> pb.ListConversationsResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        paging = CONVERSATIONS.page(v, request, (request.parent,))
        v.raise_if_invalid()
        page = await self._conversations.list(user_id, limit=paging.limit, after=paging.after)
        return pb.ListConversationsResponse(
            conversations=[convert.conversation_to_proto(c) for c in page.items],
            next_page_token=paging.next_token(page.next_after),
        )

    async def UpdateConversation(
        self, request: pb.UpdateConversationRequest, context: Context
    ) -> pb.UpdateConversationResponse:
        scope = current_scope()
        v = Validator()
        key = requests.conversation_key(v, request.conversation.name, "conversation.name", scope)
        for path in request.update_mask.paths:
            if path not in _UPDATABLE:
                v.invalid("update_mask", f"only metadata can be updated (got {path[:64]!r})")
        metadata = requests.metadata_of(v, request.conversation, "conversation.metadata")
        v.raise_if_invalid()
        written = await self._writes(
            UpdateConversation(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                metadata=metadata,
                expected_etag=expected_etag(request.conversation.etag),
            )
        )
        return pb.UpdateConversationResponse(
            conversation=convert.conversation_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    async def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: Context
    ) -> pb.DeleteConversationResponse:
        scope = current_scope()
        key = names.parse_conversation(request.name, "name", scope)
        written = await self._writes(
            DeleteConversation(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=expected_etag(request.etag),
            )
        )
        return pb.DeleteConversationResponse(change_cursor=written.change_cursor)

    # ----------------------------------------------------------------- history

    async def AppendMessages(
        self, request: pb.AppendMessagesRequest, context: Context
    ) -> pb.AppendMessagesResponse:
        scope = current_scope()
        v = Validator()
        key = requests.conversation_key(v, request.conversation, "conversation", scope)
        messages = self._messages(v, request.messages, "messages", min_count=1)
        messages = message_event_times(v, request.messages, "messages", messages)
        check_fields(v, request, RULES)
        expected = request.expected_position if request.HasField("expected_position") else None
        metadata = requests.metadata_of(v, request, "metadata")
        v.raise_if_invalid()
        written = await self._writes(
            AppendMessages(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                messages=tuple(messages),
                run_id=request.run_id,
                turn=request.turn,
                expected_position=expected,
                create_metadata=metadata,
                idempotency=idempotency_of(request, "AppendMessages"),
            )
        )
        return _messages_written(pb.AppendMessagesResponse, key, written)

    async def ListMessages(
        self, request: pb.ListMessagesRequest, context: Context
    ) -> pb.ListMessagesResponse:
        v = Validator()
        key = requests.conversation_key(v, request.parent, "parent", current_scope())
        paging = MESSAGES.page(v, request, (request.parent,))
        check_fields(v, request, RULES)
        resume = v.attempt(lambda: requests.message_position_keyset(paging.after), None)
        v.raise_if_invalid()
        start = request.start_position if resume is None else resume + 1
        page = await self._conversations.list_messages(
            key, start_position=start, limit=paging.limit
        )
        response = pb.ListMessagesResponse(next_page_token=paging.next_token(page.next_after))
        convert.add_messages(response.messages, key, page.items)
        return response

    async def StreamMessages(
        self, request: pb.StreamMessagesRequest, context: Context
    ) -> AsyncIterator[pb.StreamMessagesResponse]:
        v = Validator()
        key = requests.conversation_key(v, request.parent, "parent", current_scope())
        check_fields(v, request, RULES)
        batch_size = v.attempt(
            lambda: pagination.page_size(
                request.batch_size, pagination.STREAM_BATCH, field="batch_size"
            ),
            0,
        )
        v.raise_if_invalid()
        batches = self._conversations.stream_messages(
            key, start_position=request.start_position, batch_size=batch_size
        )
        async for batch in batches:
            response = pb.StreamMessagesResponse()
            convert.add_messages(response.messages, key, batch)
            yield response

    async def GetMessage(
        self, request: pb.GetMessageRequest, context: Context
    ) -> pb.GetMessageResponse:
        key, position = names.parse_message(request.name, "name", current_scope())
        message = await self._conversations.get_message(key, position)
        return pb.GetMessageResponse(message=convert.message_to_proto(key, message))

    async def PopMessages(
        self, request: pb.PopMessagesRequest, context: Context
    ) -> pb.PopMessagesResponse:
        scope = current_scope()
        v = Validator()
        key = requests.conversation_key(v, request.conversation, "conversation", scope)
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        expected = (
            request.expected_next_position if request.HasField("expected_next_position") else None
        )
        written = await self._writes(
            PopMessages(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                count=request.count,
                expected_next_position=expected,
                idempotency=idempotency_of(request, "PopMessages"),
            )
        )
        return _messages_written(pb.PopMessagesResponse, key, written)

    async def ClearMessages(
        self, request: pb.ClearMessagesRequest, context: Context
    ) -> pb.ClearMessagesResponse:
        scope = current_scope()
        key = names.parse_conversation(request.conversation, "conversation", scope)
        written = await self._writes(
            ClearMessages(
                caller=caller_of(scope), user_id=key.user_id, conversation_id=key.conversation_id
            )
        )
        return pb.ClearMessagesResponse(
            conversation=convert.conversation_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    # ------------------------------------------------------------- failed runs

    async def RecordFailedRun(
        self, request: pb.RecordFailedRunRequest, context: Context
    ) -> pb.RecordFailedRunResponse:
        scope = current_scope()
        v = Validator()
        key = requests.conversation_key(v, request.conversation, "conversation", scope)
        check_fields(v, request, RULES)
        messages = self._messages(v, request.messages, "messages")
        v.raise_if_invalid()
        written = await self._writes(
            RecordFailedRun(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                run_id=request.run_id,
                error=convert.run_error_from_proto(request.error),
                messages=tuple(messages),
                idempotency=idempotency_of(request, "RecordFailedRun"),
            )
        )
        return pb.RecordFailedRunResponse(
            failed_run=convert.failed_run_to_proto(key, written.value),
            change_cursor=written.change_cursor,
        )

    async def ListFailedRuns(
        self, request: pb.ListFailedRunsRequest, context: Context
    ) -> pb.ListFailedRunsResponse:
        v = Validator()
        key = requests.conversation_key(v, request.parent, "parent", current_scope())
        paging = FAILED_RUNS.page(v, request, (request.parent,))
        v.raise_if_invalid()
        page = await self._conversations.list_failed_runs(
            key, limit=paging.limit, after=paging.after
        )
        return pb.ListFailedRunsResponse(
            failed_runs=[convert.failed_run_to_proto(key, r) for r in page.items],
            next_page_token=paging.next_token(page.next_after),
        )

    # -------------------------------------------------------------- compaction

    async def SnapshotHistory(
        self, request: pb.SnapshotHistoryRequest, context: Context
    ) -> pb.SnapshotHistoryResponse:
        key = names.parse_conversation(request.conversation, "conversation", current_scope())
        snapshot = await self._conversations.snapshot(key)
        return pb.SnapshotHistoryResponse(
            revision=snapshot.revision, messages=convert.messages_to_proto(key, snapshot.messages)
        )

    async def ReplaceHistoryPrefix(
        self, request: pb.ReplaceHistoryPrefixRequest, context: Context
    ) -> pb.ReplaceHistoryPrefixResponse:
        scope = current_scope()
        v = Validator()
        key = requests.conversation_key(v, request.conversation, "conversation", scope)
        check_fields(v, request, RULES)
        if request.revision:
            revision_of(v, request.revision, "revision")
        replacement = self._messages(v, request.replacement, "replacement")
        v.raise_if_invalid()
        with compaction_named(request.message_count):
            written = await self._writes(
                ReplaceHistoryPrefix(
                    caller=caller_of(scope),
                    user_id=key.user_id,
                    conversation_id=key.conversation_id,
                    revision=request.revision,
                    message_count=request.message_count,
                    replacement=tuple(replacement),
                    run_id=request.run_id,
                    idempotency=idempotency_of(request, "ReplaceHistoryPrefix"),
                )
            )
        snapshot = written.value
        return pb.ReplaceHistoryPrefixResponse(
            revision=snapshot.revision,
            messages=convert.messages_to_proto(key, snapshot.messages),
            change_cursor=written.change_cursor,
        )
