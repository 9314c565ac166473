"""A real gRPC server on 127.0.0.1 that answers one mnemo.v1 method with scripted faults.

It stands in for the network and server faults a client must survive
(``UNAVAILABLE`` while a server restarts, a server too slow for the deadline);
it is not a mock of Mnemo: the client talks gRPC to it over a real socket.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

from mnemo.v1 import working_memory_pb2 as wm

SERVICE = "mnemo.v1.WorkingMemoryService"

#: A handler gets the attempt number (1-based), the request and the context.
Behaviour = Callable[[int, Any, grpc.ServicerContext], Any]


@dataclass
class FaultServer:
    """What the server saw: every attempt's request and invocation metadata."""

    target: str
    requests: list[Any] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)

    @property
    def attempts(self) -> int:
        return len(self.requests)


@contextlib.contextmanager
def fault_server(
    method: str, request_type: type[Any], response_type: type[Any], behaviour: Behaviour
) -> Iterator[FaultServer]:
    """Serve ``mnemo.v1.WorkingMemoryService/<method>`` with ``behaviour`` on a free port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    lock = threading.Lock()
    state = FaultServer(target="")

    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        with lock:
            state.requests.append(request)
            state.metadata.append(
                {
                    key: value
                    for key, value in context.invocation_metadata()
                    if isinstance(value, str)
                }
            )
            attempt = state.attempts
        return behaviour(attempt, request, context)

    handler = grpc.unary_unary_rpc_method_handler(
        handle,
        request_deserializer=request_type.FromString,
        response_serializer=response_type.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {method: handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    state.target = f"127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.stop(None).wait(5)


def remembered(request: wm.RememberExchangeRequest) -> wm.RememberExchangeResponse:
    """A plausible answer to ``RememberExchange``."""
    state = wm.MemoryState(name=request.name, recent=[request.exchange], etag="e1")
    return wm.RememberExchangeResponse(memory_state=state)


def unavailable_until(successful_attempt: int) -> Behaviour:
    """Fail with ``UNAVAILABLE`` before attempt ``successful_attempt``, then remember."""

    def behaviour(attempt: int, request: Any, context: grpc.ServicerContext) -> Any:
        if attempt < successful_attempt:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {attempt}: restarting")
        return remembered(request)

    return behaviour


@contextlib.contextmanager
def remember_server(behaviour: Behaviour) -> Iterator[FaultServer]:
    """A fault server for ``RememberExchange``."""
    with fault_server(
        "RememberExchange", wm.RememberExchangeRequest, wm.RememberExchangeResponse, behaviour
    ) as server:
        yield server
