"""A gRPC proxy on 127.0.0.1 in front of a real Mnemo server, with scripted faults.

It forwards every unary call byte for byte; ``before`` runs a hook ahead of
forwarding an attempt (another writer acting in between, say), ``lose`` drops
the answer of chosen attempts after the server has applied them and answers
``UNAVAILABLE`` instead, as a connection lost after the commit would. Not a
mock of Mnemo: the session talks gRPC to the proxy, the proxy to the server.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

#: ``(method short name, attempt number 1-based)`` -> whether to act.
Rule = Callable[[str, int], bool]


def _never(method: str, attempt: int) -> bool:
    return False


@dataclass
class Proxy:
    target: str
    #: Attempts seen per method short name (``"AppendMessages"``).
    attempts: Counter[str] = field(default_factory=Counter)
    lose: Rule = _never
    before: Callable[[str, int], None] = lambda method, attempt: None


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, upstream: grpc.Channel, proxy: Proxy) -> None:
        self._upstream = upstream
        self._proxy = proxy
        self._lock = threading.Lock()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method  # type: ignore[attr-defined]
        short = method.rsplit("/", 1)[-1]
        call = self._upstream.unary_unary(method)

        def handle(request: bytes, context: grpc.ServicerContext) -> Any:
            with self._lock:
                self._proxy.attempts[short] += 1
                attempt = self._proxy.attempts[short]
            self._proxy.before(short, attempt)
            metadata = [
                (key, value)
                for key, value in context.invocation_metadata()
                if not key.startswith((":", "grpc-")) and key != "user-agent"
            ]
            try:
                response, answer = call.with_call(request, metadata=metadata, timeout=10)
            except grpc.RpcError as error:
                context.set_trailing_metadata(error.trailing_metadata())
                context.abort(error.code(), error.details())
            if self._proxy.lose(short, attempt):
                context.abort(grpc.StatusCode.UNAVAILABLE, "the proxy lost the answer")
            return response

        return grpc.unary_unary_rpc_method_handler(handle)


@contextlib.contextmanager
def grpc_proxy(upstream_target: str) -> Iterator[Proxy]:
    """A proxy to ``upstream_target`` on a free port of 127.0.0.1, stopped afterwards."""
    upstream = grpc.insecure_channel(upstream_target)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    port = server.add_insecure_port("127.0.0.1:0")
    proxy = Proxy(target=f"127.0.0.1:{port}")
    server.add_generic_rpc_handlers((_Forward(upstream, proxy),))
    server.start()
    try:
        yield proxy
    finally:
        server.stop(grace=None).wait(10)
        upstream.close()
