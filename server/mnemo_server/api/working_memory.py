"""WorkingMemoryService: validate, call the use case, convert the result."""

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
from mnemo_server.domain.models import ConversationKey
from mnemo_server.domain.usecases.working_memory import WorkingMemory

Context = grpc.aio.ServicerContext[Any, Any]
_NO_KEY = ConversationKey("", "")


def _check_exchange(v: Validator, exchange: pb.Exchange, field: str) -> None:
    v.text(exchange.ask, f"{field}.ask", MAX_TEXT_BYTES, required=True)
    v.text(exchange.answer, f"{field}.answer", MAX_TEXT_BYTES)
    if exchange.HasField("at"):
        v.timestamp(exchange.at, f"{field}.at")


def _state_key(v: Validator, name: str, field: str) -> ConversationKey:
    return v.attempt(lambda: names.parse_memory_state(name, field), _NO_KEY)


class WorkingMemoryServicer(pb_grpc.WorkingMemoryServiceServicer):
    """The goliath working memory over gRPC."""

    def __init__(
        self,
        working_memory: WorkingMemory,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._memory = working_memory
        self._clock = clock

    async def GetMemoryState(
        self, request: pb.GetMemoryStateRequest, context: Context
    ) -> pb.GetMemoryStateResponse:
        key = names.parse_memory_state(request.name, "name")
        state = await self._memory.get(key)
        return pb.GetMemoryStateResponse(memory_state=convert.memory_state_to_proto(key, state))

    async def SaveMemoryState(
        self, request: pb.SaveMemoryStateRequest, context: Context
    ) -> pb.SaveMemoryStateResponse:
        state = request.memory_state
        v = Validator()
        key = _state_key(v, state.name, "memory_state.name")
        v.text(state.summary, "memory_state.summary", MAX_SUMMARY_BYTES)
        for index, exchange in enumerate(state.recent):
            _check_exchange(v, exchange, f"memory_state.recent[{index}]")
        v.raise_if_invalid()
        now = self._clock()
        saved = await self._memory.save(
            key,
            state.summary,
            [convert.exchange_from_proto(e, now) for e in state.recent],
            state.etag,
        )
        return pb.SaveMemoryStateResponse(memory_state=convert.memory_state_to_proto(key, saved))

    async def RememberExchange(
        self, request: pb.RememberExchangeRequest, context: Context
    ) -> pb.RememberExchangeResponse:
        v = Validator()
        key = _state_key(v, request.name, "name")
        _check_exchange(v, request.exchange, "exchange")
        summary = request.summary if request.HasField("summary") else None
        if summary is not None:
            v.text(summary, "summary", MAX_SUMMARY_BYTES)
        v.identifier(request.request_id, "request_id")
        v.raise_if_invalid()
        result = await self._memory.remember(
            key,
            convert.exchange_from_proto(request.exchange, self._clock()),
            keep_recent=request.keep_recent,
            summary=summary,
            etag=request.etag,
            idempotency=idempotency_of(request, "RememberExchange"),
        )
        return pb.RememberExchangeResponse(
            memory_state=convert.memory_state_to_proto(key, result.state),
            evicted=[convert.exchange_to_proto(e) for e in result.evicted],
        )

    async def ClearMemoryState(
        self, request: pb.ClearMemoryStateRequest, context: Context
    ) -> pb.ClearMemoryStateResponse:
        key = names.parse_memory_state(request.name, "name")
        state = await self._memory.clear(key, request.etag)
        return pb.ClearMemoryStateResponse(memory_state=convert.memory_state_to_proto(key, state))
