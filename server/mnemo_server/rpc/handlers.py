"""Rebuild a gRPC method handler around new behaviors (for server interceptors).

A handler has exactly one behavior, of one of four kinds (unary or streaming
request, unary or streaming response); ``rewrapped`` replaces it with
``wrap(behavior, request_streaming, response_streaming)`` and keeps the kind
and the serializers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Behavior = Callable[..., Any]
Wrap = Callable[[Behavior, bool, bool], Behavior]

_KINDS: tuple[tuple[str, bool, bool, Callable[..., Handler]], ...] = (
    ("unary_unary", False, False, grpc.unary_unary_rpc_method_handler),
    ("unary_stream", False, True, grpc.unary_stream_rpc_method_handler),
    ("stream_unary", True, False, grpc.stream_unary_rpc_method_handler),
    ("stream_stream", True, True, grpc.stream_stream_rpc_method_handler),
)


def rewrapped(
    handler: Handler,
    wrap: Wrap,
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> Handler:
    """``handler`` with its behavior wrapped (and, if given, another request
    deserializer)."""
    for attribute, request_streaming, response_streaming, make in _KINDS:
        behavior = getattr(handler, attribute)
        if behavior is not None:
            return make(
                wrap(behavior, request_streaming, response_streaming),
                request_deserializer=request_deserializer or handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


class WrappingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """A server interceptor that rebuilds the handler of each method it ``applies`` to.

    Subclasses say which methods (``applies``) and how (``wrap``, usually through
    ``rewrapped``); methods it does not apply to keep their handler untouched.
    gRPC asks the interceptor on every call; the wrapped handler of a method
    is built once and reused while the handler underneath stays the same.
    """

    _wrapped: dict[str, tuple[Handler, Handler]]

    def applies(self, method: str) -> bool:
        raise NotImplementedError

    def wrap(self, handler: Handler, method: str) -> Handler:
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler: Handler | None = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None:
            return None  # type: ignore[return-value]  # no such method: gRPC answers it
        cache = self.__dict__.setdefault("_wrapped", {})
        found = cache.get(method)
        if found is not None and found[0] is handler:
            wrapped: Handler = found[1]
            return wrapped
        wrapped = self.wrap(handler, method) if self.applies(method) else handler
        cache[method] = (handler, wrapped)
        return wrapped
