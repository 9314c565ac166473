"""Retries, deadlines, error details and call metadata, against small real gRPC servers.

The servers in ``fault_server`` answer one method with scripted faults; every
test runs with the blocking and the asyncio client.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from mnemo.client import (
    DeadlineExceededError,
    FieldViolation,
    MnemoError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
)
from tests.client.drivers import CLIENT_KINDS, open_client
from tests.client.fault_server import remember_server, remembered, unavailable_until

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(params=CLIENT_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_unavailable_is_retried_with_the_same_request_id(kind: str) -> None:
    with remember_server(unavailable_until(3)) as server:
        with open_client(kind, server.target) as client:
            state, evicted = client.remember_exchange("u1", ask="a?", answer="b")

    assert server.attempts == 3
    assert state.recent[0].ask == "a?"
    assert evicted == []
    request_ids = {request.request_id for request in server.requests}
    assert len(request_ids) == 1
    assert request_ids != {""}


def test_retries_stop_after_max_attempts(kind: str) -> None:
    with remember_server(unavailable_until(99)) as server:
        with open_client(kind, server.target, max_attempts=3) as client:
            with pytest.raises(UnavailableError) as raised:
                client.remember_exchange("u1", ask="a?", answer="b")

    assert server.attempts == 3
    assert raised.value.code is grpc.StatusCode.UNAVAILABLE
    assert "attempt 3" in raised.value.message


def test_one_attempt_means_no_retry(kind: str) -> None:
    with remember_server(unavailable_until(2)) as server:
        with open_client(kind, server.target, max_attempts=1) as client:
            with pytest.raises(UnavailableError):
                client.remember_exchange("u1", ask="a?", answer="b")

    assert server.attempts == 1


def _slow(attempt: int, request: Any, context: grpc.ServicerContext) -> Any:
    """Answer after 1 s, or as soon as the call ends (its deadline expired)."""
    ended = threading.Event()
    context.add_callback(ended.set)
    ended.wait(1.0)
    return remembered(request)


def test_the_client_default_deadline_applies(kind: str) -> None:
    with remember_server(_slow) as server:
        with open_client(kind, server.target, timeout=0.1) as client:
            with pytest.raises(DeadlineExceededError) as raised:
                client.remember_exchange("u1", ask="a?", answer="b")

    assert raised.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
    assert raised.value.reason == ""


def test_a_per_call_timeout_overrides_the_default(kind: str) -> None:
    with remember_server(_slow) as server:
        with open_client(kind, server.target, timeout=30) as client:
            with pytest.raises(DeadlineExceededError):
                client.remember_exchange("u1", ask="a?", answer="b", timeout=0.1)
    assert server.attempts == 1


def _rate_limited(attempt: int, request: Any, context: grpc.ServicerContext) -> Any:
    details = [
        error_details_pb2.ErrorInfo(
            reason="RATE_LIMITED", domain="mnemo.v1", metadata={"limit": "10/s"}
        ),
        error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=1, nanos=500_000_000)
        ),
        error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field="name", description="too often")
            ]
        ),
    ]
    packed = []
    for detail in details:
        message = any_pb2.Any()
        message.Pack(detail)
        packed.append(message)
    status = status_pb2.Status(
        code=code_pb2.RESOURCE_EXHAUSTED, message="slow down", details=packed
    )
    context.abort_with_status(rpc_status.to_status(status))


def test_status_details_become_error_attributes(kind: str) -> None:
    with remember_server(_rate_limited) as server:
        with open_client(kind, server.target) as client:
            with pytest.raises(ResourceExhaustedError) as raised:
                client.remember_exchange("u1", ask="a?", answer="b")

    error = raised.value
    assert isinstance(error, MnemoError)
    assert error.code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.message == "slow down"
    assert (error.reason, error.domain) == ("RATE_LIMITED", "mnemo.v1")
    assert error.metadata == {"limit": "10/s"}
    assert error.retry_after == datetime.timedelta(seconds=1.5)
    assert error.field_violations == [FieldViolation("name", "too often")]
    assert "RATE_LIMITED" in str(error)


def _not_found_without_details(attempt: int, request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.NOT_FOUND, "nothing here")


def test_a_status_without_details_still_maps_by_code(kind: str) -> None:
    with remember_server(_not_found_without_details) as server:
        with open_client(kind, server.target) as client:
            with pytest.raises(NotFoundError) as raised:
                client.remember_exchange("u1", ask="a?", answer="b")

    error = raised.value
    assert (error.reason, error.metadata, error.field_violations) == ("", {}, [])
    assert error.retry_after is None
    assert error.message == "nothing here"


def test_metadata_and_token_go_with_every_call(kind: str) -> None:
    tokens = iter(["tok-1", "tok-2"])
    with remember_server(unavailable_until(1)) as server:
        with open_client(
            kind, server.target, metadata={"x-tenant": "t1"}, token=lambda: next(tokens)
        ) as client:
            client.remember_exchange("u1", ask="a?", answer="b")
            client.remember_exchange("u1", ask="c?", answer="d")

    assert [m["authorization"] for m in server.metadata] == ["Bearer tok-1", "Bearer tok-2"]
    assert all(m["x-tenant"] == "t1" for m in server.metadata)
