"""Idempotency keys of requests that carry a ``request_id``.

The fingerprint is the SHA-256 of the request serialized deterministically
with ``request_id`` cleared, so a retry of the same request matches and the
same id with any other payload is ``REQUEST_ID_REUSED`` (checked by the store,
inside the write transaction). The scope is the RPC name: the same id used for
two different RPCs is a reuse too.
"""

from __future__ import annotations

import hashlib

from google.protobuf.message import Message

from mnemo_server.domain.models import Idempotency

REQUEST_ID_FIELD = "request_id"


def fingerprint(request: Message) -> str:
    """SHA-256 hex of ``request`` without its ``request_id``."""
    copy = type(request)()
    copy.CopyFrom(request)
    copy.ClearField(REQUEST_ID_FIELD)
    return hashlib.sha256(copy.SerializeToString(deterministic=True)).hexdigest()


def idempotency_of(request: Message, scope: str) -> Idempotency | None:
    """The key of ``request`` for RPC ``scope``, or ``None`` without a ``request_id``."""
    request_id: str = getattr(request, REQUEST_ID_FIELD)
    if not request_id:
        return None
    return Idempotency(request_id=request_id, scope=scope, fingerprint=fingerprint(request))
