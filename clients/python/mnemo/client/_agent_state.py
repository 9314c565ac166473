"""App state calls (``mnemo.v1.AgentStateService``): a tenant's JSON state per
app, ADK's ``app:`` state (``mnemo.integrations.adk``).

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mnemo.client._calls import Rpc, UnaryCall
from mnemo.v1 import agent_state_pb2 as ag
from mnemo.v1.agent_state_pb2_grpc import AgentStateServiceStub

__all__ = ["app_state_value", "get_app_state", "update_app_state"]


def rpc(method: str) -> Rpc:
    """The ``AgentStateService`` RPC named ``method``."""
    return Rpc(AgentStateServiceStub, method)


def _name(app: str) -> str:
    return f"apps/{app}/state"


def app_state_value(state: ag.AppState) -> dict[str, Any]:
    """An ``AppState``'s state as a dict."""
    value = json.loads(state.state_json or "{}")
    return value if isinstance(value, dict) else {}


def get_app_state(
    app: str, *, timeout: float | None = None
) -> UnaryCall[ag.GetAppStateRequest, ag.AppState]:
    """The state of the caller's tenant's app ``app`` (``app_state_value``
    decodes it): ``{}`` with an empty etag when never written.

    Raises:
        InvalidArgumentError: a malformed app id (``INVALID_NAME``).
    """
    request = ag.GetAppStateRequest(name=_name(app))
    return UnaryCall(rpc("GetAppState"), request, lambda r: r.state, timeout)


def update_app_state(
    app: str,
    delta: Mapping[str, Any],
    *,
    etag: str = "",
    timeout: float | None = None,
) -> UnaryCall[ag.UpdateAppStateRequest, ag.AppState]:
    """Merge ``delta``'s members into the app's state (``dict.update``, on the
    server, in one transaction); returns the state after it. ``etag``: only
    if it is still current.

    Raises:
        InvalidArgumentError: a malformed app id, a state over 1 MiB
            (``INVALID_NAME``, ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
        PermissionDeniedError: the caller is not an admin of its tenant.
        EtagMismatchError: ``etag`` is not current.
    """
    request = ag.UpdateAppStateRequest(
        name=_name(app),
        delta_json=json.dumps(
            dict(delta), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ),
        etag=etag,
    )
    return UnaryCall(rpc("UpdateAppState"), request, lambda r: r.state, timeout)
