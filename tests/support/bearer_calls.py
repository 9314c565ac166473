"""Calls made with a bearer token, each one's outcome kept (for rate-limit tests)."""

from __future__ import annotations

import grpc

from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1 import working_memory_pb2_grpc
from tests.support.tokens import bearer


def get_states(
    stub: working_memory_pb2_grpc.WorkingMemoryServiceStub, user: str, token: str, count: int
) -> list[grpc.StatusCode | grpc.RpcError]:
    """``count`` ``GetMemoryState`` calls of ``user``'s state, one after another:
    ``OK`` or the ``grpc.RpcError`` of each."""
    results: list[grpc.StatusCode | grpc.RpcError] = []
    for _ in range(count):
        try:
            stub.GetMemoryState(
                wm.GetMemoryStateRequest(name=f"users/{user}/memoryState"),
                metadata=bearer(token),
                timeout=10,
            )
            results.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            results.append(error)
    return results
