"""Request ids that make writes safe to retry."""

from __future__ import annotations

import uuid


def request_id_or_new(request_id: str | None) -> str:
    """``request_id`` as given, or a fresh uuid4 when ``None`` (``""`` sends none).

    Generated once per facade call, so the transparent retries of that call
    (gRPC service config) and a manual resend of its request all carry the
    same id, and the server applies the write at most once.
    """
    return str(uuid.uuid4()) if request_id is None else request_id
