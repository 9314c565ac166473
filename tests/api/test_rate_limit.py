"""The per-user rate limit through a real server: one user flooding is refused with
RESOURCE_EXHAUSTED and a RetryInfo while another user, in parallel, is served.

The bucket refills at 0.01 requests per second, so within the test no token
comes back: the counts are exact without any timing assumption.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from mnemo.v1 import working_memory_pb2_grpc
from tests.support.bearer_calls import get_states
from tests.support.rpc_errors import DETAILS_KEY, error_details
from tests.support.server import running_server
from tests.support.tokens import SigningKeys

BURST = 5
FLOOD = 40


@pytest.fixture
def limited(database_url: str, tmp_path: Path) -> Iterator[tuple[grpc.Channel, SigningKeys]]:
    keys = SigningKeys.hs256()
    settings = keys.server_settings(tmp_path, rate_limit_per_second=0.01, rate_limit_burst=BURST)
    with running_server(database_url, **settings) as target, grpc.insecure_channel(target) as ch:
        yield ch, keys


def _retry_delay_seconds(error: grpc.RpcError) -> float:
    raw = next(bytes(v) for k, v in error.trailing_metadata() or () if k == DETAILS_KEY)
    for detail in status_pb2.Status.FromString(raw).details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info.retry_delay.ToTimedelta().total_seconds()
    raise AssertionError("no RetryInfo in the status details")


def test_a_flooding_user_is_limited_while_another_user_is_served(
    limited: tuple[grpc.Channel, SigningKeys],
) -> None:
    channel, keys = limited
    stub = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    flooded: list[grpc.StatusCode | grpc.RpcError] = []
    flooder = threading.Thread(
        target=lambda: flooded.extend(get_states(stub, "alice", keys.token("alice"), FLOOD))
    )
    flooder.start()
    served = get_states(stub, "bob", keys.token("bob"), BURST)
    flooder.join(60)

    assert served == [grpc.StatusCode.OK] * BURST
    assert flooded.count(grpc.StatusCode.OK) == BURST
    refusals = [r for r in flooded if isinstance(r, grpc.RpcError)]
    assert len(refusals) == FLOOD - BURST
    for refusal in refusals:
        details = error_details(refusal)
        assert (details.code, details.domain, details.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "mnemo.v1",
            "RATE_LIMITED",
        )
        assert 0 < _retry_delay_seconds(refusal) <= 100
    # Still refused: the limit is per user, not per connection or per call.
    again = get_states(stub, "alice", keys.token("alice"), 1)
    assert isinstance(again[0], grpc.RpcError)
    assert again[0].code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_without_authentication_the_limit_is_per_client_address(
    database_url: str,
) -> None:
    with (
        running_server(database_url, rate_limit_per_second=0.01, rate_limit_burst=2) as target,
        grpc.insecure_channel(target) as channel,
    ):
        stub = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
        results = get_states(stub, "alice", "unused", 2) + get_states(stub, "bob", "unused", 1)
    assert results[:2] == [grpc.StatusCode.OK] * 2
    assert isinstance(results[2], grpc.RpcError)
    assert results[2].code() is grpc.StatusCode.RESOURCE_EXHAUSTED
