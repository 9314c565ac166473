"""AgentStateService: validate the request, call ``AppStates``, convert the result.

``apps/{app}/state`` names no user: the caller's tenant (from its verified
credential; ``""`` under ``--auth none``) picks whose app it is, so a caller
never reaches another tenant's apps, whatever it names."""

from __future__ import annotations

import re
from typing import Any

import grpc

from mnemo.v1 import agent_state_pb2 as pb
from mnemo.v1 import agent_state_pb2_grpc as pb_grpc
from mnemo_server.api import convert as shared
from mnemo_server.api.names import ID_PATTERN, invalid_name
from mnemo_server.api.validation import Validator
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.domain.app_state import MAX_STATE_BYTES, AppState, AppStates, app_state_name
from mnemo_server.domain.messages import loads_strict

Context = grpc.aio.ServicerContext[Any, Any]

_APP_STATE = re.compile(rf"apps/({ID_PATTERN})/state")
APP_STATE_PATTERN = "apps/{app}/state"


def _app_of(v: Validator, name: str) -> str:
    match = _APP_STATE.fullmatch(name)
    if match is None:
        v.add(invalid_name(name, "name", APP_STATE_PATTERN))
        return ""
    return match.group(1)


def _delta_of(v: Validator, delta_json: str) -> dict[str, Any]:
    field = "delta_json"
    if not delta_json:
        v.invalid(field, "is required")
        return {}
    v.max_bytes(delta_json, field, MAX_STATE_BYTES)
    try:
        delta = loads_strict(delta_json)
    except ValueError:
        delta = None
    if not isinstance(delta, dict):
        v.invalid(field, "must be a JSON object")
        return {}
    return delta


def _to_proto(state: AppState) -> pb.AppState:
    found = pb.AppState(
        name=app_state_name(state.app_id), state_json=state.state_json, etag=state.etag
    )
    stamp = shared.timestamp(state.update_time)
    if stamp is not None:
        found.update_time.CopyFrom(stamp)
    return found


class AgentStateServicer(pb_grpc.AgentStateServiceServicer):
    """App states over gRPC."""

    def __init__(self, app_states: AppStates) -> None:
        self._app_states = app_states

    async def GetAppState(
        self, request: pb.GetAppStateRequest, context: Context
    ) -> pb.GetAppStateResponse:
        v = Validator()
        app_id = _app_of(v, request.name)
        v.raise_if_invalid()
        found = await self._app_states.get(caller_of(current_scope()), app_id)
        return pb.GetAppStateResponse(state=_to_proto(found))

    async def UpdateAppState(
        self, request: pb.UpdateAppStateRequest, context: Context
    ) -> pb.UpdateAppStateResponse:
        v = Validator()
        app_id = _app_of(v, request.name)
        delta = _delta_of(v, request.delta_json)
        v.raise_if_invalid()
        written = await self._app_states.update(
            caller_of(current_scope()), app_id, delta, shared.expected_etag(request.etag)
        )
        return pb.UpdateAppStateResponse(state=_to_proto(written))
