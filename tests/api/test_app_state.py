"""AgentStateService through a real server: app state (``apps/{app}/state``),
its errors, tenant isolation and admin-only writes."""

from __future__ import annotations

import json

import grpc
import pytest

from mnemo.v1 import agent_state_pb2 as ag
from mnemo.v1 import agent_state_pb2_grpc
from tests.support.rpc_errors import rpc_failure
from tests.support.tokens import SigningKeys, bearer

Stub = agent_state_pb2_grpc.AgentStateServiceStub


@pytest.fixture
def states(channel: grpc.Channel) -> Stub:
    return Stub(channel)


def update(stub: Stub, app: str, delta: dict[str, object], **kwargs: object) -> ag.AppState:
    request = ag.UpdateAppStateRequest(name=f"apps/{app}/state", delta_json=json.dumps(delta))
    return stub.UpdateAppState(request, timeout=10, **kwargs).state  # type: ignore[arg-type]


def read(stub: Stub, app: str, **kwargs: object) -> ag.AppState:
    request = ag.GetAppStateRequest(name=f"apps/{app}/state")
    return stub.GetAppState(request, timeout=10, **kwargs).state  # type: ignore[arg-type]


def test_read_merge_and_etags(states: Stub) -> None:
    empty = read(states, "travel")
    assert (empty.name, empty.state_json, empty.etag) == ("apps/travel/state", "{}", "")
    assert not empty.HasField("update_time")
    first = update(states, "travel", {"motd": "hi", "n": 1})
    second = update(states, "travel", {"n": 2})
    assert json.loads(second.state_json) == {"motd": "hi", "n": 2}
    assert second.etag != first.etag and second.HasField("update_time")
    assert read(states, "travel") == second
    stale = ag.UpdateAppStateRequest(name="apps/travel/state", delta_json="{}", etag=first.etag)
    details = rpc_failure(states.UpdateAppState, stale, timeout=10)
    assert (details.code, details.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    current = ag.UpdateAppStateRequest(
        name="apps/travel/state", delta_json='{"n":3}', etag=second.etag
    )
    assert json.loads(states.UpdateAppState(current, timeout=10).state.state_json)["n"] == 3


@pytest.mark.parametrize(
    ("request_", "reason", "field"),
    [
        (ag.UpdateAppStateRequest(name="apps//state", delta_json="{}"), "INVALID_NAME", "name"),
        (ag.UpdateAppStateRequest(name="users/a/state", delta_json="{}"), "INVALID_NAME", "name"),
        (ag.UpdateAppStateRequest(name="apps/a/state"), "INVALID_FIELD", "delta_json"),
        (
            ag.UpdateAppStateRequest(name="apps/a/state", delta_json="[1]"),
            "INVALID_FIELD",
            "delta_json",
        ),
        (
            ag.UpdateAppStateRequest(name="apps/a/state", delta_json="{"),
            "INVALID_FIELD",
            "delta_json",
        ),
        (
            ag.UpdateAppStateRequest(name="apps/a/state", delta_json='{"x":NaN}'),
            "INVALID_FIELD",
            "delta_json",
        ),
        (
            ag.UpdateAppStateRequest(
                name="apps/a/state", delta_json=json.dumps({"x": "y" * 1_048_577})
            ),
            "FIELD_TOO_LARGE",
            "delta_json",
        ),
    ],
)
def test_invalid_updates(
    states: Stub, request_: ag.UpdateAppStateRequest, reason: str, field: str
) -> None:
    details = rpc_failure(states.UpdateAppState, request_, timeout=10)
    assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert field in details.fields


def test_invalid_read_name(states: Stub) -> None:
    details = rpc_failure(states.GetAppState, ag.GetAppStateRequest(name="apps/a"), timeout=10)
    assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")


def test_admins_write_the_tenants_users_read_other_tenants_never(
    jwt_target: tuple[str, SigningKeys],
) -> None:
    target, keys = jwt_target
    admin = bearer(keys.token("ops", tenant="t1", admin=True))
    alice = bearer(keys.token("alice", tenant="t1"))
    eve_admin = bearer(keys.token("eve", tenant="t2", admin=True))
    with grpc.insecure_channel(target) as channel:
        stub = Stub(channel)
        written = update(stub, "travel", {"motd": "hi"}, metadata=admin)
        assert read(stub, "travel", metadata=alice) == written
        refused = rpc_failure(
            stub.UpdateAppState,
            ag.UpdateAppStateRequest(name="apps/travel/state", delta_json='{"motd":"x"}'),
            timeout=10,
            metadata=alice,
        )
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "PERMISSION_DENIED",
        )
        # Another tenant's app of the same name is another app.
        assert read(stub, "travel", metadata=eve_admin).state_json == "{}"
        update(stub, "travel", {"motd": "t2"}, metadata=eve_admin)
        assert json.loads(read(stub, "travel", metadata=alice).state_json) == {"motd": "hi"}
        missing = rpc_failure(
            stub.GetAppState, ag.GetAppStateRequest(name="apps/travel/state"), timeout=10
        )
        assert missing.code == grpc.StatusCode.UNAUTHENTICATED
