"""Deleting a memory entry for privacy: after ``erase`` its text (and every
earlier version of it) is in no table and no index; a tombstone remains.

Where the text could be, and what ``erase`` does there, in one transaction:

- ``memories`` and ``memory_versions``: the rows are deleted;
- the full-text index: ``unindex`` (if it was live), then
  ``text_index.forget_deleted`` (SQLite: FTS5 ``optimize``);
- ``memory_embeddings``: deleted (a vector is derived from the text);
- ``memory_candidates`` approved into the entry: text, metadata and vector
  blanked (the candidate stays, approved, with its key);
- ``changes`` (the change feed): the states of the entry's earlier changes
  and of the approved candidates' changes are removed (the delete's own
  change carries the tombstone);
- ``idempotency_records``: a recorded result holds the text (a CreateMemory
  result, a ProposeMemoryCandidates result with the approved candidate);
  every record of the user that names the entry (``"memory_id":"<id>"``,
  which also matches ``saved_memory_id``) or holds one of its texts as a
  JSON ``"text"`` value is deleted. A retry of such a request is then new
  (a client-chosen id stays taken by the tombstone).

Beyond the tables, on SQLite: connections run with ``PRAGMA
secure_delete=ON`` (``store.engine.engines``), so the space the delete
frees in the pages it writes is zeroed; and ``erase`` sets
``Tx.truncate_wal``, so the write lane checkpoints and truncates the WAL
after the commit and before it answers (``store.engine.wal``, which also
says what happens when a long reader prevents it): the pages as they were
before the delete (the row, its versions, its change-feed records) are then
in no file of the database, also after a kill -9. On PostgreSQL the dead
tuples are unreachable at once, but stay in the table's pages until
(auto)vacuum and in the WAL and its archives for as long as those are kept
(docs/operations.md, "What a deletion leaves on disk").
"""

from __future__ import annotations

import json

from sqlalchemy import Connection, delete, insert, or_, select, update

from mnemo_server.domain import events
from mnemo_server.domain.commands.memories import DeleteMemory
from mnemo_server.domain.memory_models import MemoryTombstone
from mnemo_server.store.engine import dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.governance.consent import open_memory_write
from mnemo_server.store.memories import rows
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.memories.vectors import vectors_changed
from mnemo_server.store.memories.writes import find_row
from mnemo_server.store.rows import check_etag, now_micros, to_datetime
from mnemo_server.store.schema import (
    idempotency_records,
    memories,
    memory_candidates,
    memory_embeddings,
    memory_tombstones,
    memory_versions,
)
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit


def _tombstone(conn: Connection, user_id: str, memory_id: str) -> MemoryTombstone | None:
    row = conn.execute(
        select(memory_tombstones).where(
            memory_tombstones.c.user_id == user_id, memory_tombstones.c.memory_id == memory_id
        )
    ).one_or_none()
    return None if row is None else rows.tombstone(row)


def _forget_results(conn: Connection, user_id: str, memory_id: str, texts: set[str]) -> None:
    needles = [f'"memory_id":"{memory_id}"']
    needles += ['"text":' + json.dumps(t, ensure_ascii=False) for t in sorted(texts)]
    conn.execute(
        delete(idempotency_records).where(
            idempotency_records.c.user_id == user_id,
            or_(*(dialect.contains(conn, idempotency_records.c.result_json, n) for n in needles)),
        )
    )


@unit(DeleteMemory)
def erase(tx: Tx, command: DeleteMemory) -> MemoryTombstone:
    """Delete the entry: see the module doc. Deleting a deleted entry returns
    its tombstone. Raises ``NotFound``, ETAG_MISMATCH."""
    user_id, memory_id, expected_etag = command.user_id, command.memory_id, command.expected_etag
    tenant_id = open_memory_write(tx, command.caller, user_id, [command.origin_conversation_id])
    conn = tx.conn
    # Also on a repeat: a retry of a delete whose truncation failed truncates.
    tx.truncate_wal = True
    row = find_row(conn, user_id, memory_id)
    if row is None:
        found = _tombstone(conn, user_id, memory_id)
        if found is None:
            raise rows.memory_not_found(user_id, memory_id)
        return found
    check_etag(expected_etag, row.etag, rows.memory_name(user_id, memory_id))
    texts = {row.text}
    texts.update(
        conn.execute(
            select(memory_versions.c.text).where(
                memory_versions.c.memory_pk == row.id, memory_versions.c.user_id == user_id
            )
        )
        .scalars()
        .all()
    )
    if row.archived_at is None:
        fts.unindex(tx, user_id, [(row.id, row.search_document)])
    conn.execute(
        delete(memory_versions).where(
            memory_versions.c.memory_pk == row.id, memory_versions.c.user_id == user_id
        )
    )
    had_vector = conn.execute(
        delete(memory_embeddings)
        .where(memory_embeddings.c.memory_pk == row.id, memory_embeddings.c.user_id == user_id)
        .returning(memory_embeddings.c.memory_pk)
    ).first()
    conn.execute(delete(memories).where(memories.c.id == row.id, memories.c.user_id == user_id))
    blanked = conn.execute(
        update(memory_candidates)
        .where(
            memory_candidates.c.user_id == user_id,
            memory_candidates.c.saved_memory_id == memory_id,
        )
        .values(text="", metadata_json="{}", embedding_model=None, embedding=None)
        .returning(memory_candidates.c.candidate_id)
    ).scalars()
    candidates = [rows.candidate_name(user_id, c) for c in blanked]
    change_log.strip_states(conn, user_id, [rows.memory_name(user_id, memory_id), *candidates])
    _forget_results(conn, user_id, memory_id, texts)
    now = now_micros()
    conn.execute(
        insert(memory_tombstones).values(
            user_id=user_id, memory_id=memory_id, key=row.key, deleted_at=now
        )
    )
    if had_vector is not None:
        vectors_changed(conn, user_id)
    fts.forget_deleted(conn)
    event_log.record(
        tx,
        command.caller,
        user_id,
        events.deleted(user_id, memory_id, row.key),
        now,
        tenant_id=tenant_id,
    )
    tombstone = MemoryTombstone(
        user_id=user_id, memory_id=memory_id, key=row.key, delete_time=to_datetime(now)
    )
    change_log.append(tx, user_id, [change_log.memory_deleted(tombstone)])
    return tombstone
