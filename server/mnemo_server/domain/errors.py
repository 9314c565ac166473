"""Domain errors.

Use cases and stores raise these; ``mnemo_server.rpc.errors`` is the one place that
turns them into canonical gRPC status codes with a ``google.rpc.ErrorInfo``
(``reason`` is the ``ErrorReason`` value name without its ``ERROR_REASON_``
prefix) and, for invalid input, ``google.rpc.BadRequest`` field violations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldViolation:
    """One invalid request field: its path (``exchange.ask``) and what is wrong."""

    field: str
    description: str


@dataclass
class MnemoError(Exception):
    """Base of every error a caller may see. ``reason`` names an ``ErrorReason``;
    ``violations`` name the request fields at fault (always for invalid input,
    and for an ``AlreadyExists`` of a client-chosen id of a batch's entry)."""

    message: str
    reason: str = "INTERNAL"
    metadata: Mapping[str, str] = field(default_factory=dict)
    violations: Sequence[FieldViolation] = ()

    def __str__(self) -> str:
        return self.message


@dataclass
class InvalidArgument(MnemoError):
    """Bad input (INVALID_ARGUMENT). Lists every offending field."""

    reason: str = "INVALID_FIELD"


@dataclass
class NotFound(MnemoError):
    """The resource does not exist or is not the caller's (NOT_FOUND)."""

    reason: str = "NOT_FOUND"


@dataclass
class AlreadyExists(MnemoError):
    """A client-chosen id is taken (ALREADY_EXISTS)."""

    reason: str = "ALREADY_EXISTS"


@dataclass
class Aborted(MnemoError):
    """A concurrency precondition failed; re-read and retry (ABORTED)."""

    reason: str = "CONCURRENT_MODIFICATION"


@dataclass
class FailedPrecondition(MnemoError):
    """The system is not in a state that allows the call (FAILED_PRECONDITION)."""

    reason: str = "REQUEST_ID_REUSED"


@dataclass
class OutOfRange(MnemoError):
    """A cursor or position past what exists or is retained (OUT_OF_RANGE)."""

    reason: str = "CURSOR_EXPIRED"


@dataclass
class Unavailable(MnemoError):
    """The server or its store cannot serve now; retry (UNAVAILABLE)."""

    reason: str = "UNAVAILABLE"


@dataclass
class Unauthenticated(MnemoError):
    """No credential, or one that does not verify (UNAUTHENTICATED)."""

    reason: str = "UNAUTHENTICATED"


@dataclass
class PermissionDenied(MnemoError):
    """The caller is authenticated but lacks the role the call needs (PERMISSION_DENIED)."""

    reason: str = "PERMISSION_DENIED"


@dataclass
class ResourceExhausted(MnemoError):
    """A limit was hit; retry after ``retry_after_seconds`` (RESOURCE_EXHAUSTED,
    with a ``google.rpc.RetryInfo``)."""

    reason: str = "RATE_LIMITED"
    retry_after_seconds: float = 0.0


@dataclass
class NotImplementedYet(MnemoError):
    """A v1 RPC this server does not implement yet (UNIMPLEMENTED)."""

    reason: str = "NOT_IMPLEMENTED"


def not_found(name: str) -> NotFound:
    """The one answer for a resource that does not exist or is not the caller's."""
    return NotFound(f"{name} does not exist", metadata={"name": name})


def etag_mismatch(name: str) -> Aborted:
    """The etag a caller sent is not current."""
    return Aborted(
        f"{name} was changed by someone else; read it again and retry with its current etag",
        reason="ETAG_MISMATCH",
        metadata={"name": name},
    )


def request_id_reused(request_id: str) -> FailedPrecondition:
    """A request id came back with a different payload."""
    return FailedPrecondition(
        f"request_id {request_id!r} was already used for a different request; "
        "use a new request_id for a new request",
        reason="REQUEST_ID_REUSED",
        metadata={"request_id": request_id},
    )
