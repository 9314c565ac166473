"""Page sizes and opaque, keyset-based page tokens (AIP-158).

A token is the URL-safe base64 of a small JSON payload (the keyset of the last
row returned) followed by a keyed BLAKE2b tag over the listing kind, the
parent and filters it was issued for, and the payload. A token altered,
truncated, or presented to another listing, parent or filter is
``INVALID_PAGE_TOKEN``. The tag detects misuse; it is not what protects data:
every query is keyed by the caller's user, so a forged keyset could only move
within the caller's own listing.

Every List RPC pages through one ``Listing`` (its name, page sizes and
keyset shape): ``Listing.page`` reads a request's page size and token into a
``PageQuery``, whose ``next_token`` is the response's ``next_page_token``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo_server.api.validation import Validator
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.models import Keyset

_TAG_BYTES = 16
_KEY = b"mnemo.v1 page token"
_VERSION = 1
_DATETIME_TAG = "$t"


@dataclass(frozen=True)
class PageSizes:
    """A listing's default and largest page size."""

    default: int
    maximum: int


CONVERSATIONS = PageSizes(default=50, maximum=500)
MESSAGES = PageSizes(default=100, maximum=1000)
FAILED_RUNS = PageSizes(default=50, maximum=500)
STREAM_BATCH = PageSizes(default=100, maximum=1000)


def page_size(value: int, sizes: PageSizes, field: str = "page_size") -> int:
    """0 -> the default; above the maximum -> the maximum; negative -> ``INVALID_FIELD``."""
    if value < 0:
        raise InvalidArgument(
            f"{field} must not be negative (got {value}); 0 means the default {sizes.default}",
            reason="INVALID_FIELD",
            metadata={"field": field},
            violations=(FieldViolation(field, "must not be negative"),),
        )
    if value == 0:
        return sizes.default
    return min(value, sizes.maximum)


def invalid_page_token(field: str = "page_token") -> InvalidArgument:
    return InvalidArgument(
        f"{field} is not a token this server issued for this listing; "
        "start again without a page token",
        reason="INVALID_PAGE_TOKEN",
        metadata={"field": field},
        violations=(FieldViolation(field, "not issued by this server for this parent and filter"),),
    )


def _tag(kind: str, binding: Sequence[str], payload: bytes) -> bytes:
    digest = hashlib.blake2b(key=_KEY, digest_size=_TAG_BYTES)
    for part in (kind, *binding):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(4, "big"))
        digest.update(encoded)
    digest.update(payload)
    return digest.digest()


def _encode_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return {_DATETIME_TAG: value.isoformat()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot put a {type(value).__name__} in a page token")


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        return datetime.fromisoformat(value[_DATETIME_TAG])
    return value


def encode_page_token(kind: str, binding: Sequence[str], keyset: Keyset | None) -> str:
    """The token for the page after ``keyset``; ``""`` when there is no next page.

    ``kind`` names the listing (``"ListMessages"``); ``binding`` is the parent
    and every filter the token is only valid with.
    """
    if keyset is None:
        return ""
    payload = json.dumps(
        {"v": _VERSION, "k": [_encode_value(v) for v in keyset]}, separators=(",", ":")
    ).encode()
    raw = payload + _tag(kind, binding, payload)
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(
    token: str, kind: str, binding: Sequence[str], field: str = "page_token"
) -> Keyset | None:
    """The keyset a token resumes after; ``None`` for an empty token (the first page).

    Raises ``InvalidArgument(reason="INVALID_PAGE_TOKEN")``.
    """
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        if len(raw) <= _TAG_BYTES or tag != _tag(kind, binding, payload):
            raise ValueError("bad tag")
        decoded = json.loads(payload)
        if decoded["v"] != _VERSION or not isinstance(decoded["k"], list):
            raise ValueError("bad payload")
        return tuple(_decode_value(v) for v in decoded["k"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise invalid_page_token(field) from None


def check_keyset(v: Validator, keyset: Keyset | None, shape: tuple[type, ...]) -> None:
    """Refuse a page token whose keyset has not the listing's shape."""
    if keyset is None:
        return
    if len(keyset) != len(shape) or not all(
        type(value) is kind for value, kind in zip(keyset, shape, strict=True)
    ):
        v.add(invalid_page_token())


@dataclass(frozen=True)
class PageQuery:
    """What a List request asked for: the page size, the keyset its token
    resumes after, and what the next token is bound to."""

    limit: int
    after: Keyset | None
    kind: str
    binding: tuple[str, ...]

    def next_token(self, next_after: Keyset | None) -> str:
        """The response's ``next_page_token`` (``""`` on the last page)."""
        return encode_page_token(self.kind, self.binding, next_after)


@dataclass(frozen=True)
class Listing:
    """One paged List RPC: the name its tokens are bound to (``kind``), its
    page sizes and the shape of the keyset its tokens hold (``None``: the
    caller checks the keyset itself)."""

    kind: str
    sizes: PageSizes = PageSizes(default=50, maximum=500)
    keyset: tuple[type, ...] | None = None

    def page(self, v: Validator, request: Any, binding: Sequence[str]) -> PageQuery:
        """``request.page_size`` and ``request.page_token`` (bound to
        ``binding``: the parent and every filter); problems go to ``v``."""
        bound = tuple(binding)
        limit = v.attempt(lambda: page_size(request.page_size, self.sizes), 0)
        after = v.attempt(lambda: decode_page_token(request.page_token, self.kind, bound), None)
        if self.keyset is not None:
            check_keyset(v, after, self.keyset)
        return PageQuery(limit, after, self.kind, bound)
