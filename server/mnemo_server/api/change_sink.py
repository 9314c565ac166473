"""``change_cursor`` in every write response: one interceptor for all RPCs.

``ChangeCursorInterceptor`` opens a ``store.change_sink`` for each call of a
method with a unary response (unary or client-streaming request); the
store's change append reports the cursor of the last change the call
appended, and a replayed idempotent request reports the one recorded with
its result. When the call returns a response that has a ``change_cursor``
field, the interceptor sets it (a call that appended nothing leaves it 0).
Servicers never deal with the cursor.
"""

from __future__ import annotations

from typing import Any

import grpc

from mnemo_server.handlers import Behavior, Handler, WrappingInterceptor, rewrapped
from mnemo_server.store import change_sink

__all__ = ["CHANGE_CURSOR_FIELD", "ChangeCursorInterceptor"]

CHANGE_CURSOR_FIELD = "change_cursor"


def _with_cursor(behavior: Behavior) -> Behavior:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        with change_sink.collecting() as sink:
            response = await behavior(request, context)
        if sink.cursor and CHANGE_CURSOR_FIELD in response.DESCRIPTOR.fields_by_name:
            setattr(response, CHANGE_CURSOR_FIELD, sink.cursor)
        return response

    return wrapped


class ChangeCursorInterceptor(WrappingInterceptor):
    """Fills ``change_cursor`` in the responses of ``mnemo.v1`` methods (see
    the module docstring); streaming responses are passed through."""

    def __init__(self, method_prefix: str = "/mnemo.v1.") -> None:
        self._prefix = method_prefix

    def applies(self, method: str) -> bool:
        return method.startswith(self._prefix)

    def wrap(self, handler: Handler, method: str) -> Handler:
        def wrap(
            behavior: Behavior, _streaming_request: bool, streaming_response: bool
        ) -> Behavior:
            return behavior if streaming_response else _with_cursor(behavior)

        return rewrapped(handler, wrap)
