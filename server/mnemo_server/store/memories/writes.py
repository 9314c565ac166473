"""Saving memory entries (with keyed supersede), and what every memory write
shares: the vectors version, rows by id, the vectors' dimension check (every
memory write first takes the user's lock and passes the memory gate:
``consent.open_memory_write``).

Keyed supersede: a save with a key archives (stamps ``archived_at`` and a new
etag on) the live entry of the same (user, scope, conversation, key) before
inserting, in the same transaction and under the user's lock, so concurrent
keyed saves leave one live entry and none fails; the partial unique index
``uq_memories_live_key`` guarantees it in the database too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, bindparam, insert, select, union_all, update

from mnemo_server.domain import events
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.memories import CreateMemories
from mnemo_server.domain.embedding import dimension_mismatch
from mnemo_server.domain.errors import Entry, Part
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryDraft,
    SavedMemory,
)
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.engine.statements import Statement, insert_row
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.governance.consent import open_memory_write
from mnemo_server.store.memories import backlog, rows
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.rows import new_etag, now_micros, to_micros
from mnemo_server.store.schema import (
    ID,
    memories,
    memory_embeddings,
    memory_tombstones,
    memory_user_state,
)
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

MemoryRow = Row[Any]

_CHUNK = 500  # ids per IN (...) list


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def vectors_changed(conn: Connection, user_id: str) -> None:
    """Record that the user's set of live vectors changed (``vector_cache``)."""
    conn.execute(
        update(memory_user_state)
        .where(memory_user_state.c.user_id == user_id)
        .values(vectors_version=memory_user_state.c.vectors_version + 1)
    )


def find_row(conn: Connection, user_id: str, memory_id: str) -> MemoryRow | None:
    """The ``memories`` row (without its vector), or ``None``."""
    return conn.execute(
        select(memories).where(memories.c.user_id == user_id, memories.c.memory_id == memory_id)
    ).one_or_none()


def existing_row(conn: Connection, user_id: str, memory_id: str) -> MemoryRow:
    """``find_row``, raising ``NotFound``."""
    row = find_row(conn, user_id, memory_id)
    if row is None:
        raise rows.memory_not_found(user_id, memory_id)
    return row


def entry(conn: Connection, user_id: str, which: ColumnElement[bool]) -> Memory | None:
    """The user's entry that ``which`` (a condition on ``memories``) selects,
    with its vector, or ``None``."""
    row = conn.execute(
        select(*rows.MEMORY_COLUMNS)
        .select_from(rows.MEMORY_FROM)
        .where(memories.c.user_id == user_id, which)
    ).one_or_none()
    return None if row is None else rows.memory(row)


def vector_row(memory_pk: int, user_id: str, embedding: Embedding) -> dict[str, Any]:
    """The ``memory_embeddings`` row of an entry's vector."""
    return {
        "memory_pk": memory_pk,
        "user_id": user_id,
        "model": embedding.model,
        "dimensions": embedding.dimensions,
        "vector": encode_vector(embedding.values),
    }


def check_dimensions(
    conn: Connection,
    user_id: str,
    embeddings: Sequence[tuple[Entry, Embedding]],
    *,
    except_pk: int | None = None,
) -> None:
    """Raise ``dimension_mismatch`` (for the ``(entry, embedding)`` at fault)
    unless every embedding has the dimension of the user's stored vectors of
    its model (other than entry ``except_pk``'s) and of the earlier ones."""
    expected: dict[str, int] = {}
    for entry, embedding in embeddings:
        if embedding.model not in expected:
            query = select(memory_embeddings.c.dimensions).where(
                memory_embeddings.c.user_id == user_id,
                memory_embeddings.c.model == embedding.model,
            )
            if except_pk is not None:
                query = query.where(memory_embeddings.c.memory_pk != except_pk)
            stored = conn.execute(query.limit(1)).scalar_one_or_none()
            expected[embedding.model] = embedding.dimensions if stored is None else stored
        if embedding.dimensions != expected[embedding.model]:
            raise dimension_mismatch(
                entry, expected=expected[embedding.model], got=embedding.dimensions
            )


_ONE_TAKEN = Statement(
    union_all(
        *(
            select(table.c.memory_id).where(
                table.c.user_id == bindparam("user_id"), table.c.memory_id == bindparam("memory_id")
            )
            for table in (memories, memory_tombstones)
        )
    )
)


def _taken(conn: Connection | Tx, user_id: str, memory_ids: Sequence[str]) -> set[str]:
    """The ids among ``memory_ids`` of an entry or a tombstone (one statement
    for one id)."""
    if len(memory_ids) == 1:
        found = _ONE_TAKEN.first(conn, user_id=user_id, memory_id=memory_ids[0])
        return set() if found is None else {found.memory_id}
    if isinstance(conn, Tx):
        conn = conn.conn
    taken: set[str] = set()
    for chunk in _chunks(memory_ids):
        for table in (memories, memory_tombstones):
            taken.update(
                conn.execute(
                    select(table.c.memory_id).where(
                        table.c.user_id == user_id,
                        fts.one_of(conn, table.c.memory_id, chunk, ID),
                    )
                ).scalars()
            )
    return taken


def _archive_live(conn: Connection, user_id: str, draft: MemoryDraft, now: int) -> list[Memory]:
    """Archive the live entry of ``draft``'s (scope, conversation, key); the
    archived entry (without its vector)."""
    archived = conn.execute(
        update(memories)
        .where(
            memories.c.user_id == user_id,
            memories.c.scope == draft.scope.value,
            memories.c.conversation_id == draft.conversation_id,
            memories.c.key == draft.key,
            memories.c.archived_at.is_(None),
        )
        .values(archived_at=now, etag=new_etag())
        .returning(*memories.c)
    ).all()
    fts.unindex(conn, user_id, [(row.id, row.search_document) for row in archived])
    return [
        rows.memory({**row._mapping, "embedding_model": None, "embedding_vector": None})
        for row in archived
    ]


def _row_values(user_id: str, memory_id: str, draft: MemoryDraft, now: int) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "memory_id": memory_id,
        "key": draft.key,
        "scope": draft.scope.value,
        "conversation_id": draft.conversation_id,
        "source": draft.source.value,
        "text": draft.text,
        "metadata_json": rows.metadata_text(draft.metadata),
        "pinned": draft.pinned,
        "created_at": now,
        "updated_at": now,
        "archived_at": None,
        "event_at": now if draft.event_time is None else to_micros(draft.event_time),
        "etag": new_etag(),
        "version": 1,
        "search_document": fts.search_document(user_id, draft.conversation_id, draft.text),
    }


def insert_entries(
    tx: Tx,
    user_id: str,
    drafts: Sequence[tuple[str, MemoryDraft]],
    *,
    feed: list[NewChange] | None = None,
) -> tuple[SavedMemory, ...]:
    """Save ``(memory_id, draft)`` pairs in order (the caller holds
    the user's memory lock, ``consent.lock_for_memory``), as saving them one at a time would: a keyed draft
    supersedes the live entry of its key, including an earlier draft of the
    same call (saved already archived). The changes (each archived entry,
    then the new one, per draft) are added to ``feed``; a draft without a
    vector joins the embedding backlog (``backlog.queue``). The saved entries
    come back without their vectors (``embedding`` ``None``).

    Raises ``AlreadyExists`` (id of an entry or a tombstone, or twice in
    ``drafts``), EMBEDDING_DIMENSION_MISMATCH; both carry the draft's
    ``Entry`` (its index in ``drafts``), which the API layer names.
    """
    conn = tx.conn
    ids = [memory_id for memory_id, _ in drafts]
    taken = _taken(tx, user_id, ids)
    seen: dict[str, int] = {}
    for i, memory_id in enumerate(ids):
        if memory_id in taken:
            raise rows.memory_id_taken(user_id, memory_id, i)
        if memory_id in seen:
            raise rows.memory_id_taken(user_id, memory_id, i, same_as=seen[memory_id])
        seen[memory_id] = i
    vectors = [
        (Entry(Part.EMBEDDING, i), draft.embedding)
        for i, (_, draft) in enumerate(drafts)
        if draft.embedding is not None
    ]
    check_dimensions(conn, user_id, vectors)

    # Draft i is saved at ``now + i`` microseconds, so that the drafts keep
    # their order in every listing by time, as separate saves would. The
    # next write of the user starts later than that: it waits for this one,
    # which takes far longer than a microsecond per draft.
    now = now_micros()
    archived: list[list[str]] = [[] for _ in drafts]
    archived_entries: list[list[Memory]] = [[] for _ in drafts]
    superseded: dict[int, int] = {}  # draft -> the time a later draft archived it
    newest: dict[tuple[str, str, str], int] = {}
    for i, (_, draft) in enumerate(drafts):
        if not draft.key:
            continue
        chain = (draft.scope.value, draft.conversation_id, draft.key)
        if chain in newest:
            superseded[newest[chain]] = now + i
            archived[i].append(ids[newest[chain]])
        else:
            archived_entries[i] = _archive_live(conn, user_id, draft, now + i)
            archived[i] = [m.memory_id for m in archived_entries[i]]
        newest[chain] = i

    values = [_row_values(user_id, m, draft, now + i) for i, (m, draft) in enumerate(drafts)]
    for i, archived_at in superseded.items():
        values[i]["archived_at"] = archived_at
    if len(values) == 1:
        pks = [int(_INSERT_ONE.scalar(tx, **values[0]))]
    else:
        pks = list(
            conn.execute(
                insert(memories).returning(memories.c.id, sort_by_parameter_order=True), values
            ).scalars()
        )
    fts.index(
        tx,
        user_id,
        [(pk, values[i]["search_document"]) for i, pk in enumerate(pks) if i not in superseded],
    )
    for i, pk in enumerate(pks):
        values[i] |= {"id": pk, "embedding_model": None, "embedding_vector": None}
    if vectors:
        conn.execute(
            insert(memory_embeddings),
            [vector_row(pks[entry.index], user_id, e) for entry, e in vectors],
        )
    if vectors or any(archived):
        vectors_changed(conn, user_id)
    backlog.queue(tx, user_id, [pk for i, pk in enumerate(pks) if drafts[i][1].embedding is None])
    # The result is built from what was written, as ``get`` would read it but
    # without the vectors: no response carries one, and the change feed and
    # the idempotency record leave them out; so both encode the same entries
    # once (``Tx.memo``), and no vector is decoded back.
    saved = tuple(
        SavedMemory(rows.memory(values[i]), tuple(archived[i])) for i in range(len(drafts))
    )
    if feed is not None:
        for i, one in enumerate(saved):
            feed += [change_log.memory_upserted(m) for m in archived_entries[i]]
            feed.append(change_log.memory_upserted(one.memory))
    return saved


_INSERT_ONE = Statement(insert_row(memories).returning(memories.c.id))


@unit(CreateMemories)
def create(tx: Tx, command: CreateMemories) -> tuple[SavedMemory, ...]:
    """Save the drafts (``domain.commands.memories.CreateMemories``)."""
    user_id, drafts = command.user_id, command.drafts
    named = [*command.origin_conversation_ids, *(draft.conversation_id for _, draft in drafts)]
    tenant_id = open_memory_write(tx, command.caller, user_id, named)
    feed: list[NewChange] = []
    saved = insert_entries(tx, user_id, drafts, feed=feed)
    event_log.record(
        tx, command.caller, user_id, events.saved(s.memory for s in saved), tenant_id=tenant_id
    )
    change_log.append(tx, user_id, feed)
    return saved
