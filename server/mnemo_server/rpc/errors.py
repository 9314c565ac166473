"""The one place where errors become gRPC statuses.

A ``MnemoError`` becomes its canonical status code with a ``google.rpc.Status``
whose details hold one ``google.rpc.ErrorInfo`` (domain ``mnemo.v1``, the
error's reason and metadata) and, when the error names request fields (always
for ``InvalidArgument``), a ``google.rpc.BadRequest`` listing every field
violation (for ``ResourceExhausted``, a ``google.rpc.RetryInfo`` with the
delay). The status travels as ``grpc-status-details-bin`` trailing metadata
(``grpc_status.rpc_status``), so any gRPC client can decode it. Anything else
becomes ``INTERNAL`` with reason ``INTERNAL`` and a generic message; the
details go to the log, never to the caller. Nothing is ever answered with
``UNKNOWN``. A reason is a value of the generated ``ErrorReason`` enum
(``protos/mnemo/v1/error_reason.proto``), named without its ``ERROR_REASON_``
prefix; an error naming any other reason is a bug, logged and answered as
``INTERNAL``.

``ErrorMappingInterceptor`` applies this to every ``mnemo.v1`` handler:
unary and client-streaming handlers, and for server-streaming ones also the
iteration of the response stream, where an error raised after the first
message would otherwise escape unmapped. A request message that does not
parse is ``INVALID_ARGUMENT`` too (gRPC itself would answer ``UNKNOWN``).
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from mnemo.v1 import error_reason_pb2
from mnemo_server.domain.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    MnemoError,
    NotFound,
    NotImplementedYet,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from mnemo_server.rpc.handlers import Behavior, Handler, WrappingInterceptor, rewrapped

ERROR_DOMAIN = "mnemo.v1"
INTERNAL_MESSAGE = "internal error; the server log has the details"

log = logging.getLogger(__name__)

REASON_PREFIX = "ERROR_REASON_"
REASONS = frozenset(
    name.removeprefix(REASON_PREFIX)
    for name in error_reason_pb2.ErrorReason.keys()
    if name != f"{REASON_PREFIX}UNSPECIFIED"
)
"""The reasons an ``ErrorInfo`` may carry: the generated enum's values."""

_CODES: tuple[tuple[type[MnemoError], grpc.StatusCode], ...] = (
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (Aborted, grpc.StatusCode.ABORTED),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (OutOfRange, grpc.StatusCode.OUT_OF_RANGE),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (NotImplementedYet, grpc.StatusCode.UNIMPLEMENTED),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
)


def status_code_of(error: MnemoError) -> grpc.StatusCode:
    """The canonical code of a domain error; ``INTERNAL`` for the bare base class."""
    for cls, code in _CODES:
        if isinstance(error, cls):
            return code
    return grpc.StatusCode.INTERNAL


def _packed(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def to_status(error: MnemoError) -> grpc.Status:
    """The gRPC status (code, message, trailing ``grpc-status-details-bin``) for
    ``error``; ``INTERNAL`` for a reason outside ``REASONS``."""
    if error.reason not in REASONS:
        log.error("error with a reason outside ErrorReason (%r): %s", error.reason, error)
        error = internal_error()
    code = status_code_of(error)
    info = error_details_pb2.ErrorInfo(
        reason=error.reason, domain=ERROR_DOMAIN, metadata=dict(error.metadata)
    )
    details = [_packed(info)]
    if error.violations:
        bad_request = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in error.violations
            ]
        )
        details.append(_packed(bad_request))
    if isinstance(error, ResourceExhausted):
        details.append(_packed(_retry_info(error.retry_after_seconds)))
    status = status_pb2.Status(
        code=getattr(code_pb2, code.name), message=error.message, details=details
    )
    result: grpc.Status = rpc_status.to_status(status)
    return result


def _retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(max(0, math.ceil(seconds * 1e9)))
    return info


def internal_error() -> MnemoError:
    """What the caller sees for an unexpected fault."""
    return MnemoError(INTERNAL_MESSAGE, reason="INTERNAL")


def map_exception(exc: Exception, method: str) -> grpc.Status:
    """The status for any exception raised by a handler; unexpected ones are logged."""
    if isinstance(exc, MnemoError):
        if status_code_of(exc) is grpc.StatusCode.INTERNAL:
            log.error("internal error in %s: %s", method, exc, exc_info=exc)
        return to_status(exc)
    log.error("unexpected error in %s", method, exc_info=exc)
    return to_status(internal_error())


async def abort_with(context: grpc.aio.ServicerContext[Any, Any], status: grpc.Status) -> None:
    """End the call with ``status`` (raises, as ``context.abort`` does)."""
    await context.abort(status.code, status.details, status.trailing_metadata)


# ---------------------------------------------------------------- interceptor


@dataclass(frozen=True)
class _Undecodable:
    """Stands for a request message that did not parse (it reaches the handler
    wrapper, which answers INVALID_ARGUMENT, instead of gRPC's UNKNOWN)."""

    problem: str


def undecodable_request(method: str, problem: str) -> InvalidArgument:
    return InvalidArgument(
        f"the request is not a valid {method} request message ({problem})",
        reason="INVALID_FIELD",
        metadata={"field": "request"},
        violations=(FieldViolation("request", "not a valid serialized request message"),),
    )


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:
            return _Undecodable(str(exc))

    return deserialize


def _checked(request: Any, method: str, streaming: bool) -> Any:
    """The request, or for a stream of requests a stream that raises on a bad one."""
    if not streaming:
        if isinstance(request, _Undecodable):
            raise undecodable_request(method, request.problem)
        return request

    async def checked_stream() -> AsyncIterator[Any]:
        async for item in request:
            yield _checked(item, method, streaming=False)

    return checked_stream()


def _wrap_unary_response(behavior: Behavior, method: str, streaming: bool) -> Behavior:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            return await behavior(_checked(request, method, streaming), context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort_with(context, map_exception(exc, method))

    return wrapped


def _wrap_stream_response(behavior: Behavior, method: str, streaming: bool) -> Behavior:
    if not inspect.isasyncgenfunction(behavior):
        # A coroutine that writes with context.write(): awaiting it covers every write.
        return _wrap_unary_response(behavior, method, streaming)

    async def wrapped(
        request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        try:
            async for response in behavior(_checked(request, method, streaming), context):
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await abort_with(context, map_exception(exc, method))

    return wrapped


def _wrapped_handler(handler: Handler, method: str) -> Handler:
    def wrap(behavior: Behavior, request_streaming: bool, response_streaming: bool) -> Behavior:
        chosen = _wrap_stream_response if response_streaming else _wrap_unary_response
        return chosen(behavior, method, request_streaming)

    return rewrapped(handler, wrap, _tolerant(handler.request_deserializer))


class ErrorMappingInterceptor(WrappingInterceptor):
    """Maps every error of a ``mnemo.v1`` handler (see the module docstring).

    Other services (health, reflection) are passed through untouched.
    """

    def __init__(self, method_prefix: str = "/mnemo.v1.") -> None:
        self._prefix = method_prefix

    def applies(self, method: str) -> bool:
        return method.startswith(self._prefix)

    def wrap(self, handler: Handler, method: str) -> Handler:
        return _wrapped_handler(handler, method)
