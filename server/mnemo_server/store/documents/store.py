"""``SqlDocumentStore``: the reads of documents (``DocumentStore``), the
documents part of ``SqlStore``.

Each read is one read-only transaction: the user's unexpired documents (under
a namespace prefix) through the memory read gate
(``governance.consent.gated``: ``MEMORY_DISABLED`` when the user switched
memory off); filtering, ranking and paging are the domain's
(``domain.documents``), the same on both backends. The writes are commands
(``store.documents.writes``).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Connection, or_, select

from mnemo_server.domain.documents import (
    Document,
    DocumentQuery,
    Namespace,
    NamespaceQuery,
    ScoredDocument,
    document_id,
    list_namespaces,
    search,
)
from mnemo_server.store.documents import rows
from mnemo_server.store.documents import writes as document_writes
from mnemo_server.store.governance.consent import gated
from mnemo_server.store.rows import now_micros
from mnemo_server.store.schema import documents
from mnemo_server.store.transactions.database import Database

__all__ = ["SqlDocumentStore"]

_d = documents.c


def _unexpired(now: int) -> ColumnElement[bool]:
    return or_(_d.expire_at.is_(None), _d.expire_at > now)


def _get(conn: Connection, user_id: str, namespace: Namespace, key: str) -> Document | None:
    row = conn.execute(
        select(*rows.COLUMNS).where(
            _d.user_id == user_id,
            _d.document_id == document_id(namespace, key),
            _unexpired(now_micros()),
        )
    ).first()
    return None if row is None else rows.document(row)


def _of_prefix(user_id: str, prefix: Namespace) -> list[ColumnElement[bool]]:
    """The user's unexpired documents under ``prefix``."""
    which = [_d.user_id == user_id, _unexpired(now_micros())]
    if prefix:
        which.append(_d.namespace_path.startswith(rows.namespace_path(prefix), autoescape=True))
    return which


def _under(conn: Connection, user_id: str, prefix: Namespace) -> list[Document]:
    found = conn.execute(select(*rows.COLUMNS).where(*_of_prefix(user_id, prefix)))
    return [rows.document(r) for r in found]


def _namespaces(conn: Connection, user_id: str, prefix: Namespace) -> list[Namespace]:
    statement = select(_d.namespace_json).where(*_of_prefix(user_id, prefix)).distinct()
    return [rows.namespace_of(n) for n in conn.execute(statement).scalars()]


class SqlDocumentStore:
    """Implements ``DocumentStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_document(self, user_id: str, namespace: Namespace, key: str) -> Document | None:
        return await self._db.read(
            gated(user_id, lambda conn: _get(conn, user_id, namespace, key)),
            short=True,
        )

    async def search_documents(self, query: DocumentQuery) -> list[ScoredDocument]:
        user_id = query.user_id
        found = await self._db.read(
            gated(user_id, lambda conn: _under(conn, user_id, query.namespace_prefix))
        )
        return search(found, query)

    async def list_document_namespaces(self, query: NamespaceQuery) -> list[Namespace]:
        user_id = query.user_id
        found = await self._db.read(
            gated(user_id, lambda conn: _namespaces(conn, user_id, query.fixed_prefix))
        )
        return list_namespaces(found, query)

    async def purge_expired_documents(self, *, limit: int) -> int:
        now = now_micros()
        purged, _ = await self._db.write(lambda tx: document_writes.purge_expired(tx, now, limit))
        return purged
