"""WorkingMemoryService: validate, build the command, call the use case,
convert the result.

The request rules, static and from ``Settings`` (the summary word budget,
``keep_recent``, the largest saved ``recent`` list), are
``api.working_memory.rules``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import grpc

from mnemo.v1 import working_memory_pb2 as pb
from mnemo.v1 import working_memory_pb2_grpc as pb_grpc
from mnemo_server.api import names
from mnemo_server.api.convert import expected_etag
from mnemo_server.api.idempotency import idempotency_of
from mnemo_server.api.validation import Validator, check_fields
from mnemo_server.api.working_memory import convert, requests
from mnemo_server.api.working_memory.rules import RULES, keep_recent, recent_count, summary_budget
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.config import Settings
from mnemo_server.domain.commands.working_memory import (
    ClearMemoryState,
    RememberExchange,
    SaveMemoryState,
)
from mnemo_server.domain.usecases.working_memory import WorkingMemory
from mnemo_server.domain.usecases.writes import Writes

Context = grpc.aio.ServicerContext[Any, Any]


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
        key = requests.state_key(v, state.name, "memory_state.name", scope)
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        summary_budget(state.summary, self._settings, "memory_state.summary")
        recent_count(len(state.recent), self._settings)
        now = self._clock()
        written = await self._writes(
            SaveMemoryState(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=expected_etag(state.etag),
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
        key = requests.state_key(v, request.name, "name", scope)
        check_fields(v, request, RULES)
        summary = request.summary if request.HasField("summary") else None
        v.raise_if_invalid()
        keep = keep_recent(request.keep_recent, self._settings)
        if summary is not None:
            summary_budget(summary, self._settings, "summary")
        written = await self._writes(
            RememberExchange(
                caller=caller_of(scope),
                user_id=key.user_id,
                conversation_id=key.conversation_id,
                expected_etag=expected_etag(request.etag),
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
                expected_etag=expected_etag(request.etag),
            )
        )
        return pb.ClearMemoryStateResponse(
            memory_state=convert.memory_state_to_proto(key, written.value),
            change_cursor=written.change_cursor,
        )
