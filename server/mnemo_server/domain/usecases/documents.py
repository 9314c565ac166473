"""Document reads (``DocumentService``) on top of ``DocumentStore``, and the
purge of expired documents (a loop the server runs beside the purge of
temporary conversations, ``--purge-interval-seconds``).

Input is validated at the edge (``api.documents``); the writes are commands
(``domain.commands.documents``) that go to the store as they are
(``usecases.writes``). Until the purge gets to it, an expired document is
already absent from every read.
"""

from __future__ import annotations

import asyncio

from mnemo_server.domain.documents import (
    Document,
    DocumentQuery,
    Namespace,
    NamespaceQuery,
    ScoredDocument,
)
from mnemo_server.domain.errors import not_found
from mnemo_server.domain.ports import DocumentStore
from mnemo_server.runtime.periodic import drain, repeat_until_stopped

__all__ = ["Documents", "purge_documents_until_stopped"]

PURGE_BATCH = 500
"""Documents deleted per transaction."""


class Documents:
    """Reads the documents of a user."""

    def __init__(self, store: DocumentStore) -> None:
        self._store = store

    async def get(self, user_id: str, namespace: Namespace, key: str) -> Document:
        """The document. Raises ``NotFound`` (also for an expired one) and
        ``FailedPrecondition(MEMORY_DISABLED)``."""
        found = await self._store.get_document(user_id, namespace, key)
        if found is None:
            raise not_found(f"users/{user_id}/documents (namespace {list(namespace)}, key {key!r})")
        return found

    async def search(self, query: DocumentQuery) -> list[ScoredDocument]:
        """The page of documents ``query`` asks for. Raises
        ``FailedPrecondition(MEMORY_DISABLED)``."""
        return await self._store.search_documents(query)

    async def namespaces(self, query: NamespaceQuery) -> list[Namespace]:
        """The page of namespaces ``query`` asks for. Raises
        ``FailedPrecondition(MEMORY_DISABLED)``."""
        return await self._store.list_document_namespaces(query)


async def purge_documents_until_stopped(
    store: DocumentStore, interval_seconds: float, stopping: asyncio.Event
) -> None:
    """Delete every expired document, ``PURGE_BATCH`` per transaction, every
    ``interval_seconds`` until ``stopping`` is set."""

    async def round_() -> str:
        purged = await drain(lambda limit: store.purge_expired_documents(limit=limit), PURGE_BATCH)
        return f"purged {purged} expired document(s)" if purged else ""

    await repeat_until_stopped(round_, interval_seconds, stopping, "purging expired documents")
