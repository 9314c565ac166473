"""Updating a memory entry: the previous text, metadata and pinned flag
become a version (``memory_versions``); the full-text index and the vector
follow the change in the same transaction (new text without a vector keeps
the old vector until the server's embedder replaces it: ``backlog``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, update

from mnemo_server.domain import events, sameness
from mnemo_server.domain.commands.memories import UpdateMemory
from mnemo_server.domain.errors import Entry, Part
from mnemo_server.domain.memory_models import Embedding, Memory
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.feed import changes
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.governance.consent import open_memory_write
from mnemo_server.store.memories import rows, vectors
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.memories.vectors import check_dimensions, vectors_changed
from mnemo_server.store.memories.writes import entry, existing_row
from mnemo_server.store.rows import check_etag, new_etag, now_micros
from mnemo_server.store.schema import memories, memory_embeddings, memory_versions
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit


@unit(UpdateMemory)
def update_entry(tx: Tx, command: UpdateMemory) -> Memory:
    """Apply the change (``domain.commands.memories.UpdateMemory``). Raises
    ``NotFound``, ETAG_MISMATCH, EMBEDDING_DIMENSION_MISMATCH (entry
    ``Part.EMBEDDING``)."""
    user_id, memory_id, change = command.user_id, command.memory_id, command.change
    expected_etag = command.expected_etag
    tenant_id = open_memory_write(tx, command.caller, user_id, [command.origin_conversation_id])
    conn = tx.conn
    row = existing_row(conn, user_id, memory_id)
    check_etag(expected_etag, row.etag, rows.memory_name(user_id, memory_id))
    if change.embedding is not None:
        check_dimensions(
            conn, user_id, [(Entry(Part.EMBEDDING), change.embedding)], except_pk=row.id
        )
    now = now_micros()
    values: dict[str, Any] = {"updated_at": now, "etag": new_etag()}
    if (change.text, change.metadata, change.pinned) != (None, None, None):
        conn.execute(
            insert(memory_versions).values(
                memory_pk=row.id,
                version=row.version,
                user_id=user_id,
                text=row.text,
                metadata_json=row.metadata_json,
                pinned=row.pinned,
                etag=row.etag,
                updated_at=row.updated_at,
                replaced_at=now,
            )
        )
        values["version"] = row.version + 1
    if change.text is not None:
        document = fts.search_document(user_id, row.conversation_id, change.text)
        values |= {
            "text": change.text,
            "search_document": document,
            "fingerprint": sameness.fingerprint(change.text),
        }
        if row.archived_at is None and document != row.search_document:
            fts.unindex(tx, user_id, [(row.id, row.search_document)])
            fts.index(tx, user_id, [(row.id, document)])
    if change.metadata is not None:
        values["metadata_json"] = rows.metadata_text(change.metadata)
    if change.pinned is not None:
        values["pinned"] = change.pinned
    conn.execute(
        update(memories)
        .where(memories.c.id == row.id, memories.c.user_id == user_id)
        .values(**values)
    )
    if change.embedding is not None:
        vectors.unqueue(tx, user_id, row.id)
        _replace_vector(conn, user_id, row.id, change.embedding)
    elif change.text is not None and change.text != row.text:
        vectors.queue(tx, user_id, [row.id])  # the vector follows the new text
    changed = entry(conn, user_id, memories.c.id == row.id)
    assert changed is not None, "an entry just updated exists"
    event_log.record(
        tx, command.caller, user_id, events.saved([changed], updated="true"), tenant_id=tenant_id
    )
    changes.append(tx, user_id, [changes.memory_upserted(changed)])
    return changed


def _replace_vector(conn: Connection, user_id: str, pk: int, embedding: Embedding) -> None:
    conn.execute(
        memory_embeddings.delete().where(
            memory_embeddings.c.memory_pk == pk, memory_embeddings.c.user_id == user_id
        )
    )
    conn.execute(
        insert(memory_embeddings).values(
            memory_pk=pk,
            user_id=user_id,
            model=embedding.model,
            dimensions=embedding.dimensions,
            vector=encode_vector(embedding.values),
        )
    )
    vectors_changed(conn, user_id)
