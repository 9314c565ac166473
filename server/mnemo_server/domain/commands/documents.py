"""The writes of documents: ``DocumentService`` (``domain.documents``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnemo_server.domain.commands import DEFAULT_WEIGHT, Command, Idempotent
from mnemo_server.domain.documents import Document, IndexedText, Namespace

__all__ = ["DeleteDocument", "PutDocument", "RefreshDocuments"]


@dataclass(frozen=True, kw_only=True)
class PutDocument(Idempotent[Document]):
    """Create the document at ``namespace`` / ``key`` or replace its value,
    index and ttl (``ttl_micros`` ``None``: no expiry); ``expected_etag`` ``None`` is
    unconditional. Passes the memory gate. Raises ``ETAG_MISMATCH``,
    ``MEMORY_CONSENT_WITHDRAWN``, ``MEMORY_DISABLED``, ``REQUEST_ID_REUSED``,
    ``NotFound`` for a user of another tenant."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    value_json: str
    index: tuple[IndexedText, ...] | None = None
    ttl_micros: int | None = None
    expected_etag: str | None = None

    @property
    def weight(self) -> int:
        return DEFAULT_WEIGHT + len(self.value_json)


@dataclass(frozen=True, kw_only=True)
class DeleteDocument(Command[bool]):
    """Delete the document (``False``: there was none, nothing changes);
    the states of its earlier changes are stripped. Passes the memory gate.
    Raises ``ETAG_MISMATCH``, ``MEMORY_CONSENT_WITHDRAWN``,
    ``MEMORY_DISABLED``."""

    namespace: Namespace
    key: str
    expected_etag: str | None = None


@dataclass(frozen=True, kw_only=True)
class RefreshDocuments(Command[int]):
    """Restart the expiry of those of the documents (by id) that have a ttl
    and have not expired; how many. A reader's side effect: no gate, no
    change in the feed (the value did not change)."""

    document_ids: tuple[str, ...]
