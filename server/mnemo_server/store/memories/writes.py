"""Saving memory entries (with keyed supersede), and the rows by id every
memory write reads (every memory write first takes the user's lock and
passes the memory gate: ``consent.open_memory_write``).

A save call reads what its plan needs, the plan decides
(``domain.validity.plan_saves``), and ``_carry_out`` writes it; vectors and
the embedding backlog go through ``vectors``.

Keyed supersede: a save with a key takes its place in the chain of its
(user, scope, conversation, key) by event time (``domain.validity``,
``chains``): it archives (stamps ``archived_at``, ``valid_until`` and a new
etag on) the live entry when its fact is not older, else it is stored
historical; in the same transaction and under the user's lock, so
concurrent keyed saves leave one live entry and none fails; the partial
unique index ``uq_memories_live_key`` guarantees it in the database too. A
save of a fact a live entry already states stores nothing
(``domain.sameness``, ``duplicates``).

Vector rows, dimension checks and the backlog: ``vectors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Row,
    bindparam,
    insert,
    literal_column,
    select,
    union_all,
)

from mnemo_server.domain import events, sameness, validity
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.memories import CreateMemories
from mnemo_server.domain.errors import Entry, Part
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryDraft,
    NearDuplicateProbe,
    SavedMemory,
    SaveOutcome,
)
from mnemo_server.store.engine.statements import Statement, insert_row
from mnemo_server.store.engine.statistics import grew
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.governance.consent import open_memory_write
from mnemo_server.store.memories import chains, duplicates, rows, vectors
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.rows import new_etag, now_micros, to_micros
from mnemo_server.store.schema import ID, memories, memory_tombstones
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

MemoryRow = Row[Any]

_CHUNK = 500  # ids per IN (...) list


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


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


def _row_values(
    user_id: str, memory_id: str, draft: MemoryDraft, now: int, event: int, print_: str
) -> dict[str, Any]:
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
        "event_at": event,
        "valid_until": None,
        "fingerprint": print_,
        "etag": new_etag(),
        "version": 1,
        "search_document": fts.search_document(user_id, draft.conversation_id, draft.text),
    }


_ONE_TAKEN_OR_SAME = Statement(
    union_all(
        *(
            select(
                table.c.memory_id,
                literal_column("''").label("fingerprint"),
                literal_column("''").label("scope"),
                literal_column("''").label("conversation_id"),
                literal_column("''").label("key"),
                literal_column("1").label("taken"),
            ).where(
                table.c.user_id == bindparam("user_id"), table.c.memory_id == bindparam("memory_id")
            )
            for table in (memories, memory_tombstones)
        ),
        select(*duplicates.LIVE_COLUMNS, literal_column("0").label("taken")).where(
            memories.c.user_id == bindparam("user_id"),
            memories.c.fingerprint == bindparam("fingerprint"),
            memories.c.archived_at.is_(None),
        ),
    )
)


def _taken_and_live(
    tx: Tx, user_id: str, memory_ids: Sequence[str], prints: Sequence[str]
) -> tuple[set[str], list[sameness.LiveEntry]]:
    """The ids among ``memory_ids`` of an entry or a tombstone, and the
    user's live entries with one of the fingerprints ``prints`` (one
    statement for one draft)."""
    if len(memory_ids) == 1:
        found = _ONE_TAKEN_OR_SAME.all(
            tx, user_id=user_id, memory_id=memory_ids[0], fingerprint=prints[0]
        )
        taken = {row.memory_id for row in found if row.taken}
        live = [sameness.LiveEntry(*row[:5]) for row in found if not row.taken]
        return taken, live
    return _taken(tx, user_id, memory_ids), duplicates.live_entries(tx, user_id, prints)


def _check_ids(user_id: str, memory_ids: Sequence[str], taken: set[str]) -> None:
    seen: dict[str, int] = {}
    for i, memory_id in enumerate(memory_ids):
        if memory_id in taken:
            raise rows.memory_id_taken(user_id, memory_id, i)
        if memory_id in seen:
            raise rows.memory_id_taken(user_id, memory_id, i, same_as=seen[memory_id])
        seen[memory_id] = i


def insert_entries(
    tx: Tx,
    user_id: str,
    drafts: Sequence[tuple[str, MemoryDraft]],
    *,
    feed: list[NewChange] | None = None,
    near: NearDuplicateProbe | None = None,
) -> tuple[SavedMemory, ...]:
    """Save ``(memory_id, draft)`` pairs in order (the caller holds the
    user's memory lock, ``consent.lock_for_memory``), as saving them one at
    a time would:

    - a draft that states the same fact as a live entry (``domain.sameness``;
      an earlier draft of the call included) stores nothing: its result is
      that entry, ``SaveOutcome.DUPLICATE``; with ``near`` (the
      near-duplicate check), so does a draft whose vector is within its
      threshold of a live entry's (``sameness.nearest_same``), and a saved
      draft without a client vector keeps the check's vector as its
      computed one;
    - a keyed draft takes its place in its chain by event time
      (``domain.validity``): it supersedes (archives) the live entry of its
      key, or, when that entry's fact is newer, is saved as a historical
      version (``SaveOutcome.HISTORICAL``).

    The plan is the domain's (``validity.plan_saves``), from what this
    function reads for it; ``_carry_out`` writes it. The changes (each
    stored entry this call archived or re-dated, then the new ones, in
    order) are added to ``feed``; a saved draft without a vector joins the
    embedding backlog (``vectors.store_new``). The results come back without
    vectors (``embedding`` ``None``).

    Raises ``AlreadyExists`` (id of an entry or a tombstone, or twice in
    ``drafts``), EMBEDDING_DIMENSION_MISMATCH; both carry the draft's
    ``Entry`` (its index in ``drafts``), which the API layer names.
    """
    conn = tx.conn
    ids = tuple(memory_id for memory_id, _ in drafts)
    prints = tuple(sameness.fingerprint(draft.text) for _, draft in drafts)
    taken, live = _taken_and_live(tx, user_id, ids, prints)
    _check_ids(user_id, ids, taken)
    client = [
        (Entry(Part.EMBEDDING, i), draft.embedding)
        for i, (_, draft) in enumerate(drafts)
        if draft.embedding is not None
    ]
    vectors.check_dimensions(conn, user_id, client)
    call = _save_call(drafts, ids, prints, near)
    pool = (
        duplicates.live_vectors(conn, user_id, near.vectors[0].model)
        if near is not None and drafts
        else ()
    )
    found = validity.found_for(call, live, pool)
    archived_rows = {
        i: chains.archive_older_live(conn, user_id, call.chain(i), call.events[i], call.now + i)
        for i in validity.archive_first(call, found)
    }
    found.archived = {i: [row.memory_id for row in rows_of] for i, rows_of in archived_rows.items()}
    found.stored = {
        chain: chains.stored_links(conn, user_id, chain, call.since(chain))
        for chain in validity.chains_to_read(call, found)
    }
    plan = validity.plan_saves(call, found)
    return _carry_out(tx, user_id, call, plan, archived_rows, client, near, feed)


def _save_call(
    drafts: Sequence[tuple[str, MemoryDraft]],
    ids: tuple[str, ...],
    prints: tuple[str, ...],
    near: NearDuplicateProbe | None,
) -> validity.SaveCall:
    # Draft i is saved at ``now + i`` microseconds, so that the drafts keep
    # their order in every listing by time, as separate saves would. The
    # next write of the user starts later than that: it waits for this one,
    # which takes far longer than a microsecond per draft.
    now = now_micros()
    events = tuple(
        now + i if draft.event_time is None else to_micros(draft.event_time)
        for i, (_, draft) in enumerate(drafts)
    )
    plain = tuple(draft for _, draft in drafts)
    if near is None:
        return validity.SaveCall(ids, plain, prints, events, now)
    probes = tuple(sameness.unit_vector(vector.values) for vector in near.vectors)
    return validity.SaveCall(ids, plain, prints, events, now, probes, near.threshold)


def _carry_out(
    tx: Tx,
    user_id: str,
    call: validity.SaveCall,
    plan: validity.SavePlan,
    archived_rows: dict[int, list[MemoryRow]],
    client: Sequence[tuple[Entry, Embedding]],
    near: NearDuplicateProbe | None,
    feed: list[NewChange] | None,
) -> tuple[SavedMemory, ...]:
    """Write ``plan``: the stored links it re-dated, the index entries of
    what it archived, the new rows (indexed when live) and their vectors;
    the results, and the changes added to ``feed``."""
    conn = tx.conn
    redated = chains.write_stored(conn, user_id, plan.stored)
    unindexed = [row for rows_of in archived_rows.values() for row in rows_of]
    archived_pks = validity.archived_pks(plan.stored)
    unindexed += [row for row in redated if row.id in archived_pks]
    fts.unindex(conn, user_id, [(row.id, row.search_document) for row in unindexed])
    values = {save.index: _save_values(user_id, call, save) for save in plan.saves}
    pks = _insert_and_index(tx, user_id, list(values.values()))
    pk_of = dict(zip(values, pks, strict=True))
    for i, pk in pk_of.items():
        values[i] |= {"id": pk, "embedding_model": None, "embedding_vector": None}
    stored_vectors = _new_vectors(tx, user_id, call, pk_of, client, near)
    if stored_vectors or unindexed:
        vectors.vectors_changed(conn, user_id)
    saved = len(plan.saves)
    grew(tx, {"memories": saved, "memory_terms": saved, "memory_embeddings": stored_vectors})
    # The result is built from what was written, as ``get`` would read it but
    # without the vectors: no response carries one, and the change feed and
    # the idempotency record leave them out; so both encode the same entries
    # once (``Tx.memo``), and no vector is decoded back.
    made = {i: rows.memory(row) for i, row in values.items()}
    if feed is not None:
        feed += [change_log.memory_upserted(rows.memory(_no_vector(row))) for row in redated]
        for i in made:
            feed += [
                change_log.memory_upserted(rows.memory(_no_vector(row)))
                for row in archived_rows.get(i, ())
            ]
            feed.append(change_log.memory_upserted(made[i]))
    return _results(conn, user_id, call, plan, made)


def _new_vectors(
    tx: Tx,
    user_id: str,
    call: validity.SaveCall,
    pk_of: dict[int, int],
    client: Sequence[tuple[Entry, Embedding]],
    near: NearDuplicateProbe | None,
) -> int:
    """Store the saved drafts' vectors (``vectors.store_new``): the client's
    first; with the near-duplicate check, the others keep the check's
    vector (the server model's own); without it, they wait for the server's
    embedder. How many vectors were stored."""
    given = [(pk_of[entry.index], e) for entry, e in client if entry.index in pk_of]
    computed = [
        (pk_of[i], None if near is None else near.vectors[i])
        for i in pk_of
        if call.drafts[i].embedding is None
    ]
    return vectors.store_new(tx, user_id, given, computed)


def _save_values(user_id: str, call: validity.SaveCall, save: validity.Save) -> dict[str, Any]:
    """The ``memories`` row of a draft the plan stores."""
    i = save.index
    values = _row_values(
        user_id, call.ids[i], call.drafts[i], call.now + i, call.events[i], call.prints[i]
    )
    if save.link is not None:
        values |= {"valid_until": save.link.valid_until, "archived_at": save.link.archived_at}
    return values


def _results(
    conn: Connection,
    user_id: str,
    call: validity.SaveCall,
    plan: validity.SavePlan,
    made: dict[int, Memory],
) -> tuple[SavedMemory, ...]:
    """Each draft's ``SavedMemory``: a duplicate's is the entry stating its
    fact (read when the call did not make it)."""
    by_id = {m.memory_id: m for m in made.values()}
    missing = sorted({m for m in plan.same_as.values() if m not in by_id})
    by_id |= _without_vectors(conn, user_id, missing)
    saves = {save.index: save for save in plan.saves}
    return tuple(
        SavedMemory(by_id[plan.same_as[i]], (), SaveOutcome.DUPLICATE)
        if i in plan.same_as
        else SavedMemory(
            made[i],
            saves[i].archived,
            SaveOutcome.HISTORICAL if saves[i].historical else SaveOutcome.CREATED,
        )
        for i in range(len(call.drafts))
    )


def _no_vector(row: MemoryRow) -> dict[str, Any]:
    return {**row._mapping, "embedding_model": None, "embedding_vector": None}


def _without_vectors(
    conn: Connection, user_id: str, memory_ids: Sequence[str]
) -> dict[str, Memory]:
    """The entries ``memory_ids`` (without their vectors), by id."""
    if not memory_ids:
        return {}
    found = conn.execute(
        select(memories).where(
            memories.c.user_id == user_id, fts.one_of(conn, memories.c.memory_id, memory_ids, ID)
        )
    ).all()
    return {row.memory_id: rows.memory(_no_vector(row)) for row in found}


def _insert_and_index(tx: Tx, user_id: str, values: Sequence[dict[str, Any]]) -> list[int]:
    """Insert ``values`` (``memories`` rows) in order and index the live
    ones (``fts.index``); their ids. On PostgreSQL one entry is one
    statement: the count of its terms is a CTE of its insert."""
    live = [row["search_document"] for row in values if row["archived_at"] is None]
    if len(values) == 1 and tx.dialect == "postgresql":
        prefix, terms = fts.pg_index_prefix(user_id, live)
        sql = prefix + _INSERT_ONE.sql("postgresql")
        return [int(tx.raw.execute(sql, {**values[0], **terms}).fetchone()[0])]
    pks = _insert(tx, values)
    fts.index_inserted(tx, user_id, pks, values)
    return pks


def _insert(tx: Tx, values: Sequence[dict[str, Any]]) -> list[int]:
    """Insert ``values`` (``memories`` rows) in order; their ids."""
    if not values:
        return []
    if len(values) == 1:
        return [int(_INSERT_ONE.scalar(tx, **values[0]))]
    return list(
        tx.conn.execute(
            insert(memories).returning(memories.c.id, sort_by_parameter_order=True), values
        ).scalars()
    )


_INSERT_ONE = Statement(insert_row(memories).returning(memories.c.id))


@unit(CreateMemories)
def create(tx: Tx, command: CreateMemories) -> tuple[SavedMemory, ...]:
    """Save the drafts (``domain.commands.memories.CreateMemories``)."""
    user_id, drafts = command.user_id, command.drafts
    named = [*command.origin_conversation_ids, *(draft.conversation_id for _, draft in drafts)]
    tenant_id = open_memory_write(tx, command.caller, user_id, named)
    feed: list[NewChange] = []
    saved = insert_entries(tx, user_id, drafts, feed=feed, near=command.near)
    stored = [s.memory for s in saved if s.outcome is not SaveOutcome.DUPLICATE]
    if stored:
        event_log.record(tx, command.caller, user_id, events.saved(stored), tenant_id=tenant_id)
    change_log.append(tx, user_id, feed)
    return saved
