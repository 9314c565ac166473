"""Decode the ``google.rpc.Status`` details Mnemo sends with every error."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class ErrorDetails:
    """What a failed call carried: code, message, ErrorInfo and BadRequest."""

    code: grpc.StatusCode
    message: str
    domain: str = ""
    reason: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: tuple[tuple[str, str], ...] = ()
    error_infos: int = 0

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.violations)


def _status_bytes(metadata: Iterable[Any] | None) -> bytes | None:
    for key, value in metadata or ():
        if key == DETAILS_KEY:
            return bytes(value)
    return None


def error_details(error: grpc.RpcError) -> ErrorDetails:
    """Decode ``error`` (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or ""
    raw = _status_bytes(error.trailing_metadata())
    if raw is None:
        return ErrorDetails(code=code, message=message)
    status = status_pb2.Status.FromString(raw)
    infos: list[error_details_pb2.ErrorInfo] = []
    violations: list[tuple[str, str]] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            infos.append(info)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations.extend((v.field, v.description) for v in bad.field_violations)
    first = infos[0] if infos else error_details_pb2.ErrorInfo()
    return ErrorDetails(
        code=code,
        message=status.message,
        domain=first.domain,
        reason=first.reason,
        metadata=dict(first.metadata),
        violations=tuple(violations),
        error_infos=len(infos),
    )


def rpc_failure(call: Callable[..., Any], *args: Any, **kwargs: Any) -> ErrorDetails:
    """Call a sync stub method that must fail; returns what the failure carried."""
    try:
        call(*args, **kwargs)
    except grpc.RpcError as error:
        return error_details(error)
    raise AssertionError(f"{call} succeeded but was expected to fail")
