"""Exceptions raised by the Mnemo client.

Every failed call raises a ``MnemoError`` subclass chosen by the status code
(``NotFoundError``, ``AbortedError``, ...) and, for the conflicts a caller
usually handles on its own, by the ``ErrorInfo`` reason (``EtagMismatchError``,
``PositionMismatchError``, ``RevisionStaleError``, all ``AbortedError``). The
exception carries what the server put in the ``google.rpc.Status`` details:

- ``code``: the ``grpc.StatusCode``;
- ``reason``: the ``ErrorInfo`` reason, e.g. ``"ETAG_MISMATCH"`` (``""`` when
  the status has none, e.g. a deadline that expired on the client);
- ``metadata``: the ``ErrorInfo`` metadata;
- ``field_violations``: ``(field, description)`` pairs from ``BadRequest``;
- ``retry_after``: the ``RetryInfo`` delay, if any;
- ``message``: the status message.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import ClassVar, NamedTuple, cast

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

__all__ = [
    "AbortedError",
    "AlreadyExistsError",
    "CallCancelledError",
    "DataLossError",
    "DeadlineExceededError",
    "EtagMismatchError",
    "FailedPreconditionError",
    "FieldViolation",
    "HistoryCompactedError",
    "InternalError",
    "InvalidArgumentError",
    "MnemoError",
    "NotFoundError",
    "OutOfRangeError",
    "PermissionDeniedError",
    "PositionMismatchError",
    "RequestIdReusedError",
    "ResourceExhaustedError",
    "RevisionStaleError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
    "from_rpc_error",
]

ERROR_DOMAIN = "mnemo.v1"


class FieldViolation(NamedTuple):
    """One offending request field, from ``google.rpc.BadRequest``."""

    field: str
    description: str


class MnemoError(Exception):
    """A Mnemo call failed. Subclasses name the status code family."""

    #: The status code a subclass stands for (``UNKNOWN`` for the base class).
    status_code: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode | None = None,
        reason: str = "",
        domain: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
        retry_after: datetime.timedelta | None = None,
        status: status_pb2.Status | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.status_code
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations: list[FieldViolation] = list(field_violations)
        self.retry_after = retry_after
        #: The decoded ``google.rpc.Status``, for details this class does not surface.
        self.status = status

    def __str__(self) -> str:
        reason = f" [{self.reason}]" if self.reason else ""
        violations = "".join(f"\n  {v.field}: {v.description}" for v in self.field_violations)
        return f"{self.code.name}{reason}: {self.message}{violations}"


class CallCancelledError(MnemoError):
    """CANCELLED: the call was cancelled, usually by the caller."""

    status_code = grpc.StatusCode.CANCELLED


class UnknownError(MnemoError):
    """UNKNOWN: Mnemo never sends it; something between client and server did."""

    status_code = grpc.StatusCode.UNKNOWN


class InvalidArgumentError(MnemoError):
    """INVALID_ARGUMENT: fix the request; ``field_violations`` lists what is wrong."""

    status_code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceededError(MnemoError):
    """DEADLINE_EXCEEDED: no answer within the call's timeout. A write may have happened."""

    status_code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFoundError(MnemoError):
    """NOT_FOUND: the named resource does not exist."""

    status_code = grpc.StatusCode.NOT_FOUND


class AlreadyExistsError(MnemoError):
    """ALREADY_EXISTS: a resource with the chosen id exists."""

    status_code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDeniedError(MnemoError):
    """PERMISSION_DENIED: the caller lacks the role the call needs."""

    status_code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(MnemoError):
    """RESOURCE_EXHAUSTED: rate limited (``RATE_LIMITED``), too large
    (``FIELD_TOO_LARGE``) or the server's disk is full (``STORAGE_FULL``);
    see ``retry_after``."""

    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPreconditionError(MnemoError):
    """FAILED_PRECONDITION: the system is not in a state that allows the call."""

    status_code = grpc.StatusCode.FAILED_PRECONDITION


class RequestIdReusedError(FailedPreconditionError):
    """REQUEST_ID_REUSED: a ``request_id`` was sent again with a different request."""


class HistoryCompactedError(FailedPreconditionError):
    """HISTORY_COMPACTED: a pop would remove a message a compaction checkpoint covers.

    Nothing was removed. ``metadata["compacted_messages"]`` is how many
    messages the checkpoint covers, ``metadata["next_position"]`` the message count.
    """


class AbortedError(MnemoError):
    """ABORTED: a conflict with a concurrent change; re-read, then retry."""

    status_code = grpc.StatusCode.ABORTED


class EtagMismatchError(AbortedError):
    """ETAG_MISMATCH: the resource changed since its etag was read."""


class PositionMismatchError(AbortedError):
    """POSITION_MISMATCH: ``expected_position`` is not the next position; nothing was written.

    ``metadata["next_position"]`` is the position the next message would get.
    """


class RevisionStaleError(AbortedError):
    """REVISION_STALE: the history was compacted or cleared since the snapshot."""


class OutOfRangeError(MnemoError):
    """OUT_OF_RANGE: e.g. a change-feed cursor older than the retained history."""

    status_code = grpc.StatusCode.OUT_OF_RANGE


class UnimplementedError(MnemoError):
    """UNIMPLEMENTED: the server does not implement this call (yet)."""

    status_code = grpc.StatusCode.UNIMPLEMENTED


class InternalError(MnemoError):
    """INTERNAL: a server fault; the server log has the details."""

    status_code = grpc.StatusCode.INTERNAL


class UnavailableError(MnemoError):
    """UNAVAILABLE: the server could not be reached after the client's retries."""

    status_code = grpc.StatusCode.UNAVAILABLE


class DataLossError(MnemoError):
    """DATA_LOSS: unrecoverable data loss or corruption."""

    status_code = grpc.StatusCode.DATA_LOSS


class UnauthenticatedError(MnemoError):
    """UNAUTHENTICATED: no valid credential was presented."""

    status_code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: dict[grpc.StatusCode, type[MnemoError]] = {
    cls.status_code: cls
    for cls in (
        CallCancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        PermissionDeniedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
        UnauthenticatedError,
    )
}

_BY_REASON: dict[str, type[MnemoError]] = {
    "ETAG_MISMATCH": EtagMismatchError,
    "POSITION_MISMATCH": PositionMismatchError,
    "REVISION_STALE": RevisionStaleError,
    "REQUEST_ID_REUSED": RequestIdReusedError,
    "HISTORY_COMPACTED": HistoryCompactedError,
}


def error_class(code: grpc.StatusCode, reason: str = "") -> type[MnemoError]:
    """The exception class for a status code and ``ErrorInfo`` reason."""
    by_code = _BY_CODE.get(code, MnemoError)
    by_reason = _BY_REASON.get(reason)
    # A reason class is used only under its own code, so `except <code class>` always holds.
    if by_reason is not None and issubclass(by_reason, by_code):
        return by_reason
    return by_code


def from_rpc_error(error: grpc.RpcError) -> MnemoError:
    """The ``MnemoError`` for a failed ``grpc`` or ``grpc.aio`` call."""
    if not _is_call_error(error):  # a bare RpcError, e.g. raised by an interceptor
        return UnknownError(str(error) or type(error).__name__)
    code, status = error.code(), _status_details(error)
    info = error_details_pb2.ErrorInfo()
    bad_request = error_details_pb2.BadRequest()
    retry_info = error_details_pb2.RetryInfo()
    for detail in status.details if status is not None else ():
        for known in (info, bad_request, retry_info):
            if detail.Is(known.DESCRIPTOR):
                detail.Unpack(known)
    return error_class(code, info.reason)(
        error.details() or "",
        code=code,
        reason=info.reason,
        domain=info.domain,
        metadata=info.metadata,
        field_violations=(
            FieldViolation(v.field, v.description) for v in bad_request.field_violations
        ),
        retry_after=(
            retry_info.retry_delay.ToTimedelta() if retry_info.HasField("retry_delay") else None
        ),
        status=status,
    )


_CALL_ERROR_METHODS = ("code", "details", "trailing_metadata")


def _is_call_error(error: grpc.RpcError) -> bool:
    """Whether ``error`` has the status of a finished call, as call errors of both APIs do."""
    return all(callable(getattr(error, name, None)) for name in _CALL_ERROR_METHODS)


def _status_details(error: grpc.RpcError) -> status_pb2.Status | None:
    """The ``google.rpc.Status`` of the ``grpc-status-details-bin`` trailer, if any.

    ``rpc_status.from_call`` only calls ``code()``, ``details()`` and
    ``trailing_metadata()``, which ``grpc`` call errors and ``grpc.aio``'s
    ``AioRpcError`` both offer synchronously, so it serves both clients.
    """
    try:
        status: status_pb2.Status | None = rpc_status.from_call(cast(grpc.Call, error))
    except ValueError:  # the trailer disagrees with the call's code or message
        return None
    return status
