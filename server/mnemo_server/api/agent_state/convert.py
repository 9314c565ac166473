"""App states -> mnemo.v1 protos. Pure functions."""

from __future__ import annotations

from mnemo.v1 import agent_state_pb2 as pb
from mnemo_server.api.convert import timestamp
from mnemo_server.domain.app_state import AppState, app_state_name


def app_state_to_proto(state: AppState) -> pb.AppState:
    found = pb.AppState(
        name=app_state_name(state.app_id), state_json=state.state_json, etag=state.etag
    )
    stamp = timestamp(state.update_time)
    if stamp is not None:
        found.update_time.CopyFrom(stamp)
    return found
