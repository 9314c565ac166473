"""Rebuild a gRPC method handler around new behaviors (for server interceptors).

A handler has exactly one behavior, of one of four kinds (unary or streaming
request, unary or streaming response); ``rewrapped`` replaces it with
``wrap(behavior, request_streaming, response_streaming)`` and keeps the kind
and the serializers.
"""

from __future__ import annotations

from collections.abc import Callable
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
