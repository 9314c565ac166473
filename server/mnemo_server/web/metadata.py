"""HTTP headers <-> gRPC metadata, deadlines, and the status a call ended with.

Request headers that are not about HTTP itself or about the web protocols
(``authorization``, ``x-request-id``, any custom header) are forwarded to the
gRPC port as call metadata; ``-bin`` headers are base64 as in gRPC.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import grpc

from mnemo_server.domain.errors import MnemoError
from mnemo_server.rpc.errors import to_status
from mnemo_server.rpc.peers import WEB_PEER_KEY

MetadataItem = tuple[str, str | bytes]
Metadata = tuple[MetadataItem, ...]
Headers = list[tuple[bytes, bytes]]

_NOT_FORWARDED = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "cookie",
        "dnt",
        "host",
        "keep-alive",
        "origin",
        "pragma",
        "priority",
        "referer",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "x-grpc-web",
        "x-user-agent",
        # Set by the web port itself (rpc.peers), never taken from a browser.
        WEB_PEER_KEY,
    }
)
_NOT_FORWARDED_PREFIXES = ("grpc-", "connect-", "sec-", "access-control-", "proxy-")
_METADATA_KEY = re.compile(r"[0-9a-z_.-]+")
STATUS_DETAILS_KEY = "grpc-status-details-bin"


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of header ``name`` (lowercase), or ``None``."""
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def forwarded_metadata(headers: Iterable[tuple[bytes, bytes]]) -> Metadata:
    """The call metadata for these request headers (see the module docstring).

    A ``-bin`` header that is not base64 is dropped, as gRPC would drop it.
    """
    result: list[MetadataItem] = []
    for raw_key, raw_value in headers:
        key = raw_key.decode("latin-1").lower()
        if (
            key in _NOT_FORWARDED
            or key.startswith(_NOT_FORWARDED_PREFIXES)
            or not _METADATA_KEY.fullmatch(key)
        ):
            continue
        value = raw_value.decode("latin-1")
        if key.endswith("-bin"):
            try:
                result.append((key, _unbase64(value)))
            except (binascii.Error, ValueError):
                continue
        else:
            result.append((key, value))
    return tuple(result)


def _unbase64(text: str) -> bytes:
    text = text.strip()
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def metadata_value_text(value: str | bytes) -> str:
    """A metadata value as header text: binary values base64 (unpadded, as gRPC sends them)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode().rstrip("=")
    return value


def as_headers(metadata: Iterable[tuple[str, Any]], prefix: str = "") -> Headers:
    """Metadata as HTTP headers (``prefix`` for Connect's ``trailer-``)."""
    return [
        ((prefix + key).encode("latin-1"), metadata_value_text(value).encode("latin-1"))
        for key, value in metadata
    ]


_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def grpc_timeout(value: str | None) -> float | None:
    """Seconds of a ``grpc-timeout`` header (``10S``, ``250m``); ``None`` when absent or malformed."""
    if not value or len(value) < 2 or value[-1] not in _TIMEOUT_UNITS or not value[:-1].isdigit():
        return None
    return int(value[:-1]) * _TIMEOUT_UNITS[value[-1]]


def connect_timeout(value: str | None) -> float | None:
    """Seconds of a ``connect-timeout-ms`` header; ``None`` when absent or malformed."""
    if not value or not value.isdigit():
        return None
    return int(value) / 1000


@dataclass(frozen=True)
class Outcome:
    """How a forwarded call ended: its status and trailing metadata."""

    code: grpc.StatusCode
    message: str
    trailing: Metadata

    @property
    def ok(self) -> bool:
        return self.code is grpc.StatusCode.OK

    @property
    def status_details(self) -> bytes | None:
        """The ``google.rpc.Status`` bytes of ``grpc-status-details-bin``, if any."""
        for key, value in self.trailing:
            if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
                return value
        return None

    @property
    def plain_trailing(self) -> Metadata:
        """Trailing metadata without ``grpc-status-details-bin``."""
        return tuple(item for item in self.trailing if item[0] != STATUS_DETAILS_KEY)

    @classmethod
    def of_error(cls, error: MnemoError) -> Outcome:
        """The outcome the gRPC port would give ``error`` (``errors.to_status``)."""
        status = to_status(error)
        return cls(status.code, status.details, as_metadata(status.trailing_metadata))

    @classmethod
    def of_call(
        cls, code: grpc.StatusCode, details: str | None, trailing: Iterable[Any] | None
    ) -> Outcome:
        return cls(code, details or "", as_metadata(trailing))


def as_metadata(items: Iterable[Any] | None) -> Metadata:
    """Any metadata sequence (``grpc.aio.Metadata``, tuples) as a tuple of pairs."""
    return tuple((str(key), value) for key, value in items or ())
