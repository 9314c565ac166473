"""Units of work on documents: put (an upsert), delete, the refresh of
expiries, and the purge of expired documents.

Puts and deletes are memory writes: they open the user's memory gate first
(``governance.consent.open_memory_write``: consent, the memory switch, and
the user's lock, so one user's document writes run one at a time). An
expired document is treated as absent: a put over it starts a new document
(a new create time), a delete of it deletes nothing (the purge will).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import and_, delete, insert, select, update

from mnemo_server.domain.changes import ChangeOperation, NewChange
from mnemo_server.domain.commands.documents import DeleteDocument, PutDocument, RefreshDocuments
from mnemo_server.domain.documents import Document, Namespace, document_id
from mnemo_server.domain.errors import etag_mismatch
from mnemo_server.store.documents import rows
from mnemo_server.store.engine.fan_out import purge_per_user
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance.consent import open_memory_write
from mnemo_server.store.rows import new_etag, now_micros, to_datetime
from mnemo_server.store.schema import documents
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

__all__ = ["delete_document", "purge_expired", "put_document", "refresh_documents"]

_d = documents.c


def _found(tx: Tx, user_id: str, namespace: Namespace, key: str) -> tuple[Any, str]:
    """The document's row (expired or not) and its id."""
    doc_id = document_id(namespace, key)
    row = tx.conn.execute(
        select(_d.id, *rows.COLUMNS).where(_d.user_id == user_id, _d.document_id == doc_id)
    ).first()
    return row, doc_id


def _is_live(row: Any, now: int) -> bool:
    return row is not None and (row.expire_at is None or row.expire_at > now)


def _without_value(document: Document) -> Document:
    """What a DELETE change carries: the address, not the content."""
    return dataclasses.replace(document, value={}, index=None)


@unit(PutDocument)
def put_document(tx: Tx, command: PutDocument) -> Document:
    """Create or replace the document (module doc). Raises
    ``Aborted(ETAG_MISMATCH)`` and the gate's ``FailedPrecondition``."""
    user_id = command.user_id
    open_memory_write(tx, command.caller, user_id)
    now = now_micros()
    found, doc_id = _found(tx, user_id, command.namespace, command.key)
    live = _is_live(found, now)
    current = found.etag if live and found is not None else ""
    name = f"users/{user_id}/documents/{doc_id}"
    if command.expected_etag is not None and command.expected_etag != current:
        raise etag_mismatch(name)
    created = found.created_at if live and found is not None else now
    expire_at = None if command.ttl_micros is None else now + command.ttl_micros
    after = Document(
        user_id=user_id,
        namespace=command.namespace,
        key=command.key,
        value=command.value,
        etag=new_etag(),
        create_time=to_datetime(created),
        update_time=to_datetime(now),
        expire_time=None if expire_at is None else to_datetime(expire_at),
        ttl_micros=command.ttl_micros,
        index=command.index,
    )
    values = rows.values(after)
    if found is None:
        tx.conn.execute(insert(documents).values(values))
    else:
        # Its key is not rewritten: a sharded store refuses a statement that
        # sets the distribution column (``user_id``), even to its own value.
        changed = {k: v for k, v in values.items() if k not in ("user_id", "document_id")}
        tx.conn.execute(
            update(documents).where(_d.user_id == user_id, _d.id == found.id).values(changed)
        )
    change_log.append(tx, user_id, [change_log.upsert(name, rows.slim(after))])
    return after


@unit(DeleteDocument)
def delete_document(tx: Tx, command: DeleteDocument) -> bool:
    """Delete the document; ``False`` when there was none (or it had
    expired). Raises ``Aborted(ETAG_MISMATCH)`` and the gate's
    ``FailedPrecondition``."""
    user_id = command.user_id
    open_memory_write(tx, command.caller, user_id)
    now = now_micros()
    found, doc_id = _found(tx, user_id, command.namespace, command.key)
    live = _is_live(found, now)
    name = f"users/{user_id}/documents/{doc_id}"
    if command.expected_etag is not None and command.expected_etag != (
        found.etag if live and found is not None else ""
    ):
        raise etag_mismatch(name)
    if found is None or not live:
        return False
    _delete(tx, user_id, [found])
    return True


def _delete(tx: Tx, user_id: str, found: list[Any]) -> None:
    """Delete the rows of one user, strip their earlier changes' states and
    append one DELETE each."""
    conn = tx.conn
    ids = [r.id for r in found]
    gone = [rows.document(r) for r in found]
    conn.execute(delete(documents).where(_d.user_id == user_id, _d.id.in_(ids)))
    change_log.strip_states(conn, user_id, [d.name for d in gone])
    change_log.append(
        tx,
        user_id,
        [NewChange(ChangeOperation.DELETE, d.name, "", _without_value(d)) for d in gone],
    )


@unit(RefreshDocuments)
def refresh_documents(tx: Tx, command: RefreshDocuments) -> int:
    """Restart the expiry of the listed live documents that have a ttl."""
    if not command.document_ids:
        return 0
    now = now_micros()
    result = tx.conn.execute(
        update(documents)
        .where(
            _d.user_id == command.user_id,
            _d.document_id.in_(sorted(set(command.document_ids))),
            _d.ttl_micros.is_not(None),
            and_(_d.expire_at.is_not(None), _d.expire_at > now),
        )
        .values(expire_at=now + _d.ttl_micros)
    )
    return int(result.rowcount or 0)


def purge_expired(tx: Tx, now: int, limit: int) -> int:
    """Delete up to ``limit`` documents expired at ``now`` (oldest expiry
    first), one user's at a time (``engine.fan_out``); how many."""

    def purge(user_id: str, ids: list[Any]) -> int:
        locked = tx.conn.execute(
            select(_d.id, *rows.COLUMNS)
            .where(_d.user_id == user_id, _d.id.in_(ids), _d.expire_at <= now)
            .order_by(_d.id)
            .with_for_update(skip_locked=True)
        ).all()
        if locked:
            _delete(tx, user_id, list(locked))
        return len(ids)  # found, whether deleted here or by another pass

    oldest = (
        select(_d.user_id, _d.id).where(_d.expire_at <= now).order_by(_d.expire_at, _d.id)
    ).limit(limit)
    return purge_per_user(tx.conn, oldest, purge)
