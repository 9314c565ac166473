"""WorkingMemoryService: validate, build the command, call the use case,
convert the result.

Besides sizes, the edge checks the settings-driven rules (``Settings``):
the summary word budget, the default and largest ``keep_recent`` and the
largest saved ``recent`` list.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import grpc

from mnemo.v1 import working_memory_pb2 as pb
from mnemo.v1 import working_memory_pb2_grpc as pb_grpc
from mnemo_server.api import convert, names
from mnemo_server.api.idempotency import idempotency_of
from mnemo_server.api.validation import MAX_SUMMARY_BYTES, MAX_TEXT_BYTES, Validator
from mnemo_server.auth.caller import CallScope, caller_of, current_scope
from mnemo_server.config import Settings
from mnemo_server.domain.commands.working_memory import (
    ClearMemoryState,
    RememberExchange,
    SaveMemoryState,
)
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.models import ConversationKey
from mnemo_server.domain.usecases.working_memory import WorkingMemory
from mnemo_server.domain.usecases.writes import Writes
from mnemo_server.domain.working_memory import check_summary_budget

Context = grpc.aio.ServicerContext[Any, Any]
_NO_KEY = ConversationKey("", "")


def _check_exchange(v: Validator, exchange: pb.Exchange, field: str) -> None:
    v.text(exchange.ask, f"{field}.ask", MAX_TEXT_BYTES, required=True)
    v.text(exchange.answer, f"{field}.answer", MAX_TEXT_BYTES)
    if exchange.HasField("at"):
        v.timestamp(exchange.at, f"{field}.at")


def _state_key(v: Validator, name: str, field: str, scope: CallScope | None) -> ConversationKey:
    return v.attempt(lambda: names.parse_memory_state(name, field, scope), _NO_KEY)


class WorkingMemoryServicer(pb_grpc.WorkingMemoryServiceServicer):
    """The goliath working memory over gRPC."""

    def __init__(
        self,
        working_memory: WorkingMemory,
        writes: Writes,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._memory = working_memory
        self._writes = writes
        self._settings = settings
        self._clock = clock

    def _keep_recent(self, requested: int, field: str = "keep_recent") -> int:
        """0 -> the server default; 1..recent_max as asked; else ``INVALID_FIELD``."""
        settings = self._settings
        if requested == 0:
            return settings.recent_default
        if not 1 <= requested <= settings.recent_max:
            limit = settings.recent_max
            raise InvalidArgument(
                f"{field} must be between 1 and {limit} (0 means the default "
                f"{settings.recent_default}); got {requested}",
                reason="INVALID_FIELD",
                metadata={"field": field, "max": str(limit)},
                violations=(FieldViolation(field, f"must be in 0..{limit}"),),
            )
        return requested

    def _check_recent_count(self, count: int) -> None:
        limit = self._settings.recent_max
        if count > limit:
            raise InvalidArgument(
                f"memory_state.recent has {count} exchanges; at most {limit} are kept",
                reason="FIELD_TOO_LARGE",
                metadata={"field": "memory_state.recent", "limit": str(limit)},
                violations=(FieldViolation("memory_state.recent", f"at most {limit} exchanges"),),
            )

    async def GetMemoryState(
        self, request: pb.GetMemoryStateRequest, context: Context
    ) -> pb.GetMemoryStateResponse:
        key = names.parse_memory_state(request.name, "name", current_scope())
        state = await self._memory.get(key)
        response = pb.GetMemoryStateResponse()
        convert.fill_memory_state(response.memory_state, key, state)
        return response

    async def SaveMemoryState(
        self, request: pb.SaveMemoryStateRequest, context: Context
    ) -> pb.SaveMemoryStateResponse:
        scope = current_scope()
        state = request.memory_state
        v = Validator()
        key = _state_key(v, state.name, "memory_state.name", scope)
        v.text(state.summary, "memory_state.summary", MAX_SUMMARY_BYTES)
        for index, exchange in enumerate(state.recent):
            _check_exchange(v, exchange, f"memory_state.recent[{index}]")
        v.raise_if_invalid()
        check_summary_budget(
            state.summary, self._settings.summary_max_words, field="memory_state.summary"
        )
        self._check_recent_count(len(state.recent))
        now = self._clock()
        written = await self._writes(
            SaveMemoryState(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=convert.expected_etag(state.etag),
                summary=state.summary,
                recent=tuple(convert.exchange_from_proto(e, now) for e in state.recent),
            )
        )
        return pb.SaveMemoryStateResponse(
            memory_state=convert.memory_state_to_proto(key, written.value),
            change_cursor=written.change_cursor,
        )

    async def RememberExchange(
        self, request: pb.RememberExchangeRequest, context: Context
    ) -> pb.RememberExchangeResponse:
        scope = current_scope()
        v = Validator()
        key = _state_key(v, request.name, "name", scope)
        _check_exchange(v, request.exchange, "exchange")
        summary = request.summary if request.HasField("summary") else None
        if summary is not None:
            v.text(summary, "summary", MAX_SUMMARY_BYTES)
        v.identifier(request.request_id, "request_id")
        v.raise_if_invalid()
        keep = self._keep_recent(request.keep_recent)
        if summary is not None:
            check_summary_budget(summary, self._settings.summary_max_words, field="summary")
        written = await self._writes(
            RememberExchange(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=convert.expected_etag(request.etag),
                exchange=convert.exchange_from_proto(request.exchange, self._clock()),
                keep_recent=keep,
                summary=summary,
                idempotency=idempotency_of(request, "RememberExchange"),
            )
        )
        result = written.value
        response = pb.RememberExchangeResponse(change_cursor=written.change_cursor)
        convert.fill_memory_state(response.memory_state, key, result.state)
        convert.add_exchanges(response.evicted, result.evicted)
        return response

    async def ClearMemoryState(
        self, request: pb.ClearMemoryStateRequest, context: Context
    ) -> pb.ClearMemoryStateResponse:
        scope = current_scope()
        key = names.parse_memory_state(request.name, "name", scope)
        written = await self._writes(
            ClearMemoryState(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=convert.expected_etag(request.etag),
            )
        )
        return pb.ClearMemoryStateResponse(
            memory_state=convert.memory_state_to_proto(key, written.value),
            change_cursor=written.change_cursor,
        )
