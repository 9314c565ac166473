"""The outermost interceptor: RPC metrics and the access log of every call.

For each call of every method (health and reflection too) it counts the
call in flight, and when it ends records its status code and duration
(``observability.metrics``) and, with an access log (``--log-format
json``), writes one line to the ``mnemo.access`` logger: the method, the
code, the duration in milliseconds and the user (the verified caller under
``--auth jwt``, else the user of the resource the request names in its
``parent``, ``name`` or ``conversation`` field; empty if none). It
never logs a request's or a response's content.

The code is the one the call ended with: ``OK``, the code of the status a
handler or an inner interceptor aborted with (``context.code()``),
``CANCELLED`` when the call was cancelled (the client went away or its
deadline passed) and ``UNKNOWN`` for an exception no inner interceptor
mapped (only possible outside ``mnemo.v1``). Install it first, so that it
also sees the calls that authentication or the rate limit refuse:
``grpc.aio.server(interceptors=[observing, auth, error_mapping])``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
from google.protobuf.message import Message

from mnemo_server.auth.access import user_of_name
from mnemo_server.observability.metrics import Metrics
from mnemo_server.rpc.call_log import CallNote, noting
from mnemo_server.rpc.handlers import Behavior, Handler, WrappingInterceptor, rewrapped

__all__ = ["ACCESS_LOGGER", "ObservingInterceptor"]

Context = grpc.aio.ServicerContext[Any, Any]

ACCESS_LOGGER = "mnemo.access"
# Without an access log nobody notes the user (``rpc.call_log``).
_NO_NOTE: contextlib.nullcontext[None] = contextlib.nullcontext()
access_log = logging.getLogger(ACCESS_LOGGER)


def _code_of(context: Context) -> str:
    """The code the call's context holds (set by an abort), ``OK`` if none."""
    code: grpc.StatusCode | None = context.code()
    return "OK" if code is None else code.name


def _failure_code(error: BaseException, context: Context) -> str:
    if isinstance(error, grpc.aio.AbortError):
        return _code_of(context)
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        return "CANCELLED"
    return "UNKNOWN"


# The request fields that hold the resource name a call acts on; only these
# are read, so that no text of a request (a memory starting "users/...")
# can reach the log.
_NAME_FIELDS = ("parent", "name", "conversation", "thread_name", "target_name")


def _request_user(request: Any) -> str:
    """The user of the resource a request message names (``--auth none``)."""
    if not isinstance(request, Message):
        return ""
    fields = request.DESCRIPTOR.fields_by_name
    for field in _NAME_FIELDS:
        value = getattr(request, field) if field in fields else None
        if isinstance(value, str) and (found := user_of_name(value)):
            return found
    return ""


class _Call:
    """What one method's wrapper records at the end of each call."""

    __slots__ = ("_flight", "_log", "_method", "_metrics")

    def __init__(self, metrics: Metrics | None, method: str, log: bool) -> None:
        self._metrics = metrics
        self._method = method
        self._flight = metrics.in_flight(method) if metrics is not None else None
        self._log = log

    def begin(self) -> float:
        if self._flight is not None:
            self._flight.inc()
        return time.perf_counter()

    def end(self, started: float, code: str, note: CallNote | None, request: Any) -> None:
        seconds = time.perf_counter() - started
        if self._metrics is not None:
            self._flight.dec()  # type: ignore[union-attr]
            self._metrics.rpc_children(self._method, code).record(seconds)
        if note is not None and access_log.isEnabledFor(logging.INFO):
            milliseconds = round(seconds * 1000, 3)
            fields = {
                "method": self._method,
                "code": code,
                "duration_ms": milliseconds,
                "user": note.user_id or _request_user(request),
            }
            # makeRecord + handle: what ``info`` does, without looking up the
            # caller's frame (which would cost the call more than the rest).
            access_log.handle(
                access_log.makeRecord(
                    ACCESS_LOGGER,
                    logging.INFO,
                    __file__,
                    0,
                    "%s %s %.1fms",
                    (self._method, code, milliseconds),
                    None,
                    extra=fields,
                )
            )


@contextlib.contextmanager
def _observed(call: _Call, log: bool, request: Any, context: Context) -> Iterator[None]:
    """One call, timed and ended with its code: the context's when the body
    ends, the error's when it raises (a stream's consumer going away too)."""
    started = call.begin()
    code = "OK"
    note = None
    try:
        with noting() if log else _NO_NOTE as note:
            yield
        code = _code_of(context)
    except BaseException as error:
        code = _failure_code(error, context)
        raise
    finally:
        call.end(started, code, note, request)


def _unary_response(behavior: Behavior, call: _Call, log: bool) -> Behavior:
    async def wrapped(request: Any, context: Context) -> Any:
        with _observed(call, log, request, context):
            return await behavior(request, context)

    return wrapped


def _stream_response(behavior: Behavior, call: _Call, log: bool) -> Behavior:
    if not inspect.isasyncgenfunction(behavior):
        # A coroutine that writes with context.write(): awaiting it covers every write.
        return _unary_response(behavior, call, log)

    async def wrapped(request: Any, context: Context) -> AsyncIterator[Any]:
        with _observed(call, log, request, context):
            async for response in behavior(request, context):
                yield response

    return wrapped


class ObservingInterceptor(WrappingInterceptor):
    """Metrics (unless ``metrics`` is ``None``) and, with ``access_log``, an
    access log line of every call."""

    def __init__(self, metrics: Metrics | None, *, access_log: bool = False) -> None:
        self._metrics = metrics
        self._log = access_log

    def applies(self, method: str) -> bool:
        return True

    def wrap(self, handler: Handler, method: str) -> Handler:
        call = _Call(self._metrics, method, self._log)

        def wrap(behavior: Behavior, request_streaming: bool, response_streaming: bool) -> Behavior:
            chosen = _stream_response if response_streaming else _unary_response
            return chosen(behavior, call, self._log)

        return rewrapped(handler, wrap)
