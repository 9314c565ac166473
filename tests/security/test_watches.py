"""Refused change watches, in bursts and from one client, against a live server.

- A burst of watches past the server's limit: every refused one ends with
  ``RESOURCE_EXHAUSTED`` ``RATE_LIMITED`` and a retry delay, never a bare
  ``CANCELLED``. (gRPC's core cancels calls the application has not taken yet
  once more than ``grpc.server.max_pending_requests`` wait, which a burst of a
  few thousand calls on one connection reached before the server raised it.)
- Under ``--auth none`` user names prove nothing, so one client (one
  connection) may hold at most ``--watch-max-watchers-per-peer`` watches,
  whatever users it names; another client still gets its own.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from mnemo.v1 import sync_pb2, sync_pb2_grpc
from tests.support.rpc_errors import error_details
from tests.support.server import running_server

pytestmark = [pytest.mark.sqlite, pytest.mark.timeout(180)]

BURST = 2000
FIRST_MESSAGE_TIMEOUT_S = 60.0


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mnemo.db'}"


def _retry_delay(error: grpc.aio.AioRpcError) -> float | None:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(bytes(value))
            for detail in status.details:
                if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                    info = error_details_pb2.RetryInfo()
                    detail.Unpack(info)
                    return info.retry_delay.ToTimedelta().total_seconds()
    return None


async def _first_outcome(
    stub: sync_pb2_grpc.SyncServiceStub, user: str, opened: list[grpc.aio.Call]
) -> str:
    """``"watching"`` once the watch sends its first message (it stays open,
    in ``opened``), else how it ended."""
    call = stub.WatchChanges(sync_pb2.WatchChangesRequest(parent=f"users/{user}"))
    opened.append(call)
    try:
        await call.read()
    except grpc.aio.AioRpcError as error:
        found = error_details(error)
        return f"{found.code.name} {found.reason} retry={_retry_delay(error)}"
    return "watching"


async def _burst(target: str, users: list[str]) -> collections.Counter[str]:
    """Open a watch per user at once on one connection; what each one got."""
    opened: list[grpc.aio.Call] = []
    async with grpc.aio.insecure_channel(target) as channel:
        stub = sync_pb2_grpc.SyncServiceStub(channel)
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(_first_outcome(stub, user, opened) for user in users)),
                FIRST_MESSAGE_TIMEOUT_S * 2,
            )
        finally:
            for call in opened:
                call.cancel()
    return collections.Counter(outcomes)


async def test_every_watch_refused_in_a_burst_gets_resource_exhausted(sqlite_url: str) -> None:
    limit = 10
    with running_server(
        sqlite_url, watch_max_watchers=limit, watch_max_watchers_per_peer=BURST
    ) as target:
        outcomes = await _burst(target, [f"u{i}" for i in range(BURST)])
    refused = "RESOURCE_EXHAUSTED RATE_LIMITED retry=1.0"
    assert outcomes == {"watching": limit, refused: BURST - limit}, outcomes


class _Held:
    """Watches opened on one channel and held until ``close``."""

    def __init__(self, target: str) -> None:
        # Its own connection, not a subchannel shared with the other channels.
        self._channel = grpc.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        self._stub = sync_pb2_grpc.SyncServiceStub(self._channel)
        self._calls: list[Iterator[sync_pb2.WatchChangesResponse]] = []

    def open(self, user: str) -> str:
        call = self._stub.WatchChanges(
            sync_pb2.WatchChangesRequest(parent=f"users/{user}"),
            timeout=FIRST_MESSAGE_TIMEOUT_S * 2,
        )
        try:
            next(call)
        except grpc.RpcError as error:
            found = error_details(error)
            return f"{found.code.name} {found.reason}"
        self._calls.append(call)
        return "watching"

    def close(self) -> None:
        for call in self._calls:
            call.cancel()  # type: ignore[attr-defined]
        self._channel.close()


def test_one_client_cannot_take_every_watch_without_auth(sqlite_url: str) -> None:
    with running_server(sqlite_url, watch_max_watchers=50, watch_max_watchers_per_peer=5) as target:
        greedy, other = _Held(target), _Held(target)
        try:
            assert [greedy.open(f"g{i}") for i in range(5)] == ["watching"] * 5
            # Other users' names do not help: the connection is at its share.
            assert greedy.open("g5") == "RESOURCE_EXHAUSTED RATE_LIMITED"
            assert other.open("o0") == "watching"
        finally:
            greedy.close()
            other.close()
