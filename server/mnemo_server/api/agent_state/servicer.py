"""AgentStateService: validate the request, call ``AppStates``, convert the result.

``apps/{app}/state`` names no user: the caller's tenant (from its verified
credential; ``""`` under ``--auth none``) picks whose app it is, so a caller
never reaches another tenant's apps, whatever it names."""

from __future__ import annotations

from typing import Any

import grpc

from mnemo.v1 import agent_state_pb2 as pb
from mnemo.v1 import agent_state_pb2_grpc as pb_grpc
from mnemo_server.api.agent_state import convert, requests
from mnemo_server.api.convert import expected_etag
from mnemo_server.api.validation import Validator
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.domain.app_state import AppStates

Context = grpc.aio.ServicerContext[Any, Any]


class AgentStateServicer(pb_grpc.AgentStateServiceServicer):
    """App states over gRPC."""

    def __init__(self, app_states: AppStates) -> None:
        self._app_states = app_states

    async def GetAppState(
        self, request: pb.GetAppStateRequest, context: Context
    ) -> pb.GetAppStateResponse:
        v = Validator()
        app_id = requests.app_of(v, request.name)
        v.raise_if_invalid()
        found = await self._app_states.get(caller_of(current_scope()), app_id)
        return pb.GetAppStateResponse(state=convert.app_state_to_proto(found))

    async def UpdateAppState(
        self, request: pb.UpdateAppStateRequest, context: Context
    ) -> pb.UpdateAppStateResponse:
        v = Validator()
        app_id = requests.app_of(v, request.name)
        delta = requests.delta_of(v, request.delta_json)
        v.raise_if_invalid()
        written = await self._app_states.update(
            caller_of(current_scope()), app_id, delta, expected_etag(request.etag)
        )
        return pb.UpdateAppStateResponse(state=convert.app_state_to_proto(written))
