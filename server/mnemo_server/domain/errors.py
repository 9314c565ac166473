"""Domain errors.

Use cases and stores raise these; ``mnemo_server.rpc.errors`` is the one place that
turns them into canonical gRPC status codes with a ``google.rpc.ErrorInfo``
(``reason`` is the ``ErrorReason`` value name without its ``ERROR_REASON_``
prefix) and, for invalid input, ``google.rpc.BadRequest`` field violations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True)
class FieldViolation:
    """One invalid request field: its path (``exchange.ask``) and what is wrong."""

    field: str
    description: str


class Part(StrEnum):
    """The input of a command that an ``Entry`` names."""

    MEMORY_ID = "memory_id"
    """A draft's id."""
    EMBEDDING = "embedding"
    """A draft's (or an update's) vector."""
    QUERY_EMBEDDING = "query_embedding"
    """A recall's query vector."""
    MESSAGE_COUNT = "message_count"
    """How many projection messages a compaction replaces."""
    REVISION = "revision"
    """The history revision a compaction was computed from."""


@dataclass(frozen=True)
class Entry:
    """Which input of a command an error found by the store is about: the
    ``part`` of draft ``index`` (0 for a command of one draft or none);
    ``same_as``: the earlier draft of the same command that chose the same id.

    The domain and the store never name request fields: the API layer turns
    an ``Entry`` into the request's field path and its field violation
    (``api.memories.requests.EntryFields``, ``api.conversations.rules``)."""

    part: Part
    index: int = 0
    same_as: int | None = None


@dataclass
class MnemoError(Exception):
    """Base of every error a caller may see. ``reason`` names an ``ErrorReason``
    (every raise names it: there is no default); ``violations`` name the
    request fields at fault (always for invalid input, and for an
    ``AlreadyExists`` of a client-chosen id of a batch's entry); ``entry``:
    the command's input at fault, for the API layer to name (``Entry``)."""

    message: str
    reason: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    violations: Sequence[FieldViolation] = ()
    entry: Entry | None = None

    def __str__(self) -> str:
        return self.message


@dataclass
class InvalidArgument(MnemoError):
    """Bad input (INVALID_ARGUMENT). Lists every offending field."""


@dataclass
class NotFound(MnemoError):
    """The resource does not exist or is not the caller's (NOT_FOUND)."""


@dataclass
class AlreadyExists(MnemoError):
    """A client-chosen id is taken (ALREADY_EXISTS)."""


@dataclass
class Aborted(MnemoError):
    """A concurrency precondition failed; re-read and retry (ABORTED)."""


@dataclass
class FailedPrecondition(MnemoError):
    """The system is not in a state that allows the call (FAILED_PRECONDITION)."""


@dataclass
class OutOfRange(MnemoError):
    """A cursor or position past what exists or is retained (OUT_OF_RANGE)."""


@dataclass
class Unavailable(MnemoError):
    """The server or its store cannot serve now; retry (UNAVAILABLE)."""


@dataclass
class Unauthenticated(MnemoError):
    """No credential, or one that does not verify (UNAUTHENTICATED)."""


@dataclass
class PermissionDenied(MnemoError):
    """The caller is authenticated but lacks the role the call needs (PERMISSION_DENIED)."""


@dataclass
class ResourceExhausted(MnemoError):
    """A limit was hit; retry after ``retry_after_seconds`` (RESOURCE_EXHAUSTED,
    with a ``google.rpc.RetryInfo``)."""

    retry_after_seconds: float = 0.0


@dataclass
class NotImplementedYet(MnemoError):
    """A v1 RPC this server does not implement yet (UNIMPLEMENTED)."""


def not_found(name: str) -> NotFound:
    """The one answer for a resource that does not exist or is not the caller's."""
    return NotFound(f"{name} does not exist", metadata={"name": name}, reason="NOT_FOUND")


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
