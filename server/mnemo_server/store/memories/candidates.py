"""Extraction candidates: propose (pending), list, approve (saved as a memory
entry in the same transaction), reject. Only a pending candidate changes
state; approving an approved one, or rejecting a rejected one, returns what
it did the first time."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from mnemo_server.domain import events
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.memories import (
    ApproveCandidate,
    ProposeCandidates,
    RejectCandidate,
)
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    CandidateState,
    Memory,
    MemoryCandidate,
    MemorySource,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store import paging
from mnemo_server.store.engine import dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.governance.consent import (
    check_write_gate,
    lock_for_memory,
    open_memory_write,
)
from mnemo_server.store.memories import reads, rows, writes
from mnemo_server.store.rows import now_micros, to_micros
from mnemo_server.store.schema import memory_candidates
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

# An approved candidate's entry: its vector is the candidate's; its id is generated.


def candidate_values(user_id: str, candidate: CandidateDraft, now: int) -> dict[str, Any]:
    """The ``memory_candidates`` row of a new pending candidate."""
    draft = candidate.draft
    embedding = draft.embedding
    return {
        "user_id": user_id,
        "candidate_id": candidate.candidate_id,
        "text": draft.text,
        "key": draft.key,
        "scope": draft.scope.value,
        "memory_conversation_id": draft.conversation_id,
        "source": draft.source.value,
        "metadata_json": rows.metadata_text(draft.metadata),
        "pinned": draft.pinned,
        "embedding_model": None if embedding is None else embedding.model,
        "embedding": None if embedding is None else encode_vector(embedding.values),
        "event_at": None if draft.event_time is None else to_micros(draft.event_time),
        "state": CandidateState.PENDING.value,
        "conversation_id": candidate.conversation_id,
        "run_id": candidate.run_id,
        "turn": candidate.turn,
        "extractor": candidate.extractor,
        "created_at": now,
        "resolved_at": None,
        "saved_memory_id": "",
    }


def _find(conn: Connection, user_id: str, candidate_id: str) -> Row[Any]:
    row = conn.execute(
        select(memory_candidates).where(
            memory_candidates.c.user_id == user_id,
            memory_candidates.c.candidate_id == candidate_id,
        )
    ).one_or_none()
    if row is None:
        raise rows.candidate_not_found(user_id, candidate_id)
    return row


@unit(ProposeCandidates)
def propose(tx: Tx, command: ProposeCandidates) -> tuple[MemoryCandidate, ...]:
    """Store pending candidates, in order. Raises ``AlreadyExists`` for a
    taken (or repeated) candidate id."""
    user_id, candidates = command.user_id, command.candidates
    named = [n for c in candidates for n in (c.conversation_id, c.draft.conversation_id)]
    tenant_id = open_memory_write(tx, command.caller, user_id, named)
    conn = tx.conn
    ids = [c.candidate_id for c in candidates]
    taken = set(
        conn.execute(
            select(memory_candidates.c.candidate_id).where(
                memory_candidates.c.user_id == user_id, memory_candidates.c.candidate_id.in_(ids)
            )
        ).scalars()
    )
    for candidate_id in ids:
        if candidate_id in taken:
            raise rows.candidate_id_taken(user_id, candidate_id)
        taken.add(candidate_id)
    if not candidates:
        return ()
    now = now_micros()
    stored = conn.execute(
        insert(memory_candidates).returning(*memory_candidates.c, sort_by_parameter_order=True),
        [candidate_values(user_id, c, now) for c in candidates],
    ).all()
    event_log.record(
        tx, command.caller, user_id, events.proposed(len(stored)), now, tenant_id=tenant_id
    )
    proposed = tuple(rows.candidate(row) for row in stored)
    change_log.append(tx, user_id, [change_log.candidate_upserted(c) for c in proposed])
    return proposed


def list_page(
    conn: Connection, user_id: str, include_resolved: bool, limit: int, after: Keyset | None
) -> Page[MemoryCandidate]:
    """Newest first; keyset ``(created_at micros, candidate_id)``."""
    candidate_id = dialect.by_id(conn, memory_candidates.c.candidate_id)
    statement = select(memory_candidates).where(memory_candidates.c.user_id == user_id)
    if not include_resolved:
        statement = statement.where(memory_candidates.c.state == CandidateState.PENDING.value)
    statement = paging.newest_first(
        statement,
        (memory_candidates.c.created_at, candidate_id),
        paging.typed(after, (int, str)),
        limit,
    )
    return paging.read_page(
        conn, statement, limit, rows.candidate, lambda r: (r.created_at, r.candidate_id)
    )


def _resolve(
    conn: Connection, user_id: str, candidate_id: str, state: CandidateState, **values: Any
) -> MemoryCandidate:
    changed = conn.execute(
        update(memory_candidates)
        .where(
            memory_candidates.c.user_id == user_id,
            memory_candidates.c.candidate_id == candidate_id,
        )
        .values(state=state.value, resolved_at=now_micros(), **values)
        .returning(*memory_candidates.c)
    ).one()
    return rows.candidate(changed)


@unit(ApproveCandidate)
def approve(tx: Tx, command: ApproveCandidate) -> tuple[Memory, MemoryCandidate]:
    """Save the pending candidate's draft as entry ``memory_id`` (source
    extractor) and mark it approved. Raises ``NotFound``, CANDIDATE_RESOLVED
    (rejected, cancelled, or approved into an entry deleted since),
    ``AlreadyExists`` (``memory_id`` taken), EMBEDDING_DIMENSION_MISMATCH
    (``Entry(Part.EMBEDDING)``)."""
    user_id, candidate_id, memory_id = command.user_id, command.candidate_id, command.memory_id
    # Locked first, then gated by the candidate's conversations.
    lock = lock_for_memory(tx, command.caller, user_id)
    conn = tx.conn
    row = _find(conn, user_id, candidate_id)
    check_write_gate(tx, lock, user_id, (row.conversation_id, row.memory_conversation_id))
    tenant_id = lock.tenant_id
    candidate = rows.candidate(row)
    if candidate.state is CandidateState.APPROVED:
        saved = writes.find_row(conn, user_id, candidate.saved_memory_id)
        if saved is None:
            raise rows.candidate_resolved(
                user_id, candidate_id, "approved", f" (into {candidate.saved_memory_id}, deleted)"
            )
        return reads.get(conn, user_id, candidate.saved_memory_id), candidate
    if candidate.state is not CandidateState.PENDING:
        raise rows.candidate_resolved(user_id, candidate_id, candidate.state.value)
    draft = replace(candidate.draft, source=MemorySource.EXTRACTOR)
    feed: list[NewChange] = []
    (saved_memory,) = writes.insert_entries(tx, user_id, [(memory_id, draft)], feed=feed)
    # An exact duplicate of a live entry stores nothing: the candidate is
    # approved into that entry.
    saved_id = saved_memory.memory.memory_id
    approved = _resolve(
        conn, user_id, candidate_id, CandidateState.APPROVED, saved_memory_id=saved_id
    )
    name = rows.candidate_name(user_id, candidate_id)
    happened = [] if saved_id != memory_id else events.saved([saved_memory.memory])
    happened += events.resolved("approved", name, rows.memory_name(user_id, saved_id))
    event_log.record(tx, command.caller, user_id, happened, tenant_id=tenant_id)
    feed.append(change_log.candidate_upserted(approved))
    change_log.append(tx, user_id, feed)
    return saved_memory.memory, approved


@unit(RejectCandidate)
def reject(tx: Tx, command: RejectCandidate) -> MemoryCandidate:
    """Mark the pending candidate rejected. Raises ``NotFound``,
    CANDIDATE_RESOLVED (approved or cancelled)."""
    user_id, candidate_id = command.user_id, command.candidate_id
    tenant_id = lock_for_memory(tx, command.caller, user_id).tenant_id
    conn = tx.conn
    candidate = rows.candidate(_find(conn, user_id, candidate_id))
    if candidate.state is CandidateState.REJECTED:
        return candidate
    if candidate.state is not CandidateState.PENDING:
        raise rows.candidate_resolved(user_id, candidate_id, candidate.state.value)
    name = rows.candidate_name(user_id, candidate_id)
    event_log.record(
        tx, command.caller, user_id, events.resolved("rejected", name), tenant_id=tenant_id
    )
    rejected = _resolve(conn, user_id, candidate_id, CandidateState.REJECTED)
    change_log.append(tx, user_id, [change_log.candidate_upserted(rejected)])
    return rejected
