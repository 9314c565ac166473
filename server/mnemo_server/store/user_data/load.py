"""Loading an export into a user without data (``ImportUserData``), in one
write transaction: either everything is loaded or nothing is.

Kept as exported: ids (conversations, failed runs, memories, candidates,
events), message positions, versions, times, etags, archive state, vectors,
compaction checkpoints (and the history's revision), consent and settings.
Made anew: the internal keys (rows get new surrogate ids, inserted in the
export's order, so every order that follows them is the same), the default
conversation's row (it has no fields of its own), the user's row (in the
caller's tenant; imported events take that tenant too), a candidate's
resolve time (not part of the API: the import time) and the user's vectors
version (``memory_user_state``, a fresh value, see ``consent.lock_for_memory``).
Not applied: the consent and settings records when the user kept their own
through an erasure (``erase.RETAINED_TABLES``): the decision the
user made last stands. Not imported because not exported: idempotency records (a retry of a request
made before the export is a new request). The change feed gets one change per
imported resource (consent, settings, conversations, working memories,
messages, failed runs, entries, tombstones, candidates), in that order.

The user's row is created if needed and locked ``FOR UPDATE`` (PostgreSQL)
before the check that the user has no data, so two imports, or an import
and an erasure, of one user run one after the other.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, insert, literal, select

from mnemo_server.domain import codec, sameness
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.commands.governance import ImportUserData
from mnemo_server.domain.errors import FailedPrecondition
from mnemo_server.domain.governance import Consent
from mnemo_server.domain.memory_models import (
    CandidateDraft,
    CandidateState,
    Memory,
    MemoryCandidate,
)
from mnemo_server.domain.models import Conversation, ConversationKey, NewMessage, StoredMessage
from mnemo_server.domain.names import user_name
from mnemo_server.domain.user_data import CompactionCheckpoint, UserData
from mnemo_server.store import rows as convert
from mnemo_server.store.checkpoints import user_data as graph_checkpoints
from mnemo_server.store.documents import rows as document_rows
from mnemo_server.store.engine.statistics import grew
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import consent as consent_rows
from mnemo_server.store.memories import rows, vectors
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.memories.candidates import candidate_values
from mnemo_server.store.memories.vectors import vector_row
from mnemo_server.store.schema import (
    compaction_checkpoints,
    conversations,
    documents,
    events,
    failed_runs,
    memories,
    memory_candidates,
    memory_embeddings,
    memory_tombstones,
    memory_user_state,
    memory_versions,
    messages,
    user_settings,
    users,
    working_memory,
)
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit
from mnemo_server.store.user_data.erase import RETAINED_TABLES, user_tables
from mnemo_server.store.users import ensure_user

__all__ = ["import_user"]


def _micros(value: datetime | None, default: int) -> int:
    return default if value is None else convert.to_micros(value)


def _optional_micros(value: datetime | None) -> int | None:
    return None if value is None else convert.to_micros(value)


def _etag(value: str) -> str:
    return value or convert.new_etag()


def _insert(conn: Connection, table: Table, values: Sequence[dict[str, Any]]) -> None:
    if values:
        conn.execute(insert(table), list(values))


def _stored(items: Iterable[StoredMessage]) -> str:
    """Unpositioned messages as stored (a JSON array of ``NewMessage``)."""
    return codec.dumps(tuple(NewMessage(m.message_json, m.role, m.text) for m in items))


_DECISION_KINDS = ("consent", "memory_settings")
"""The records of a decision an erasure keeps (``erase.RETAINED_TABLES``)."""


def _check_empty(conn: Connection, user_id: str) -> None:
    for table in user_tables():
        if table in RETAINED_TABLES:
            continue
        found = conn.execute(
            select(literal(1)).select_from(table).where(table.c.user_id == user_id).limit(1)
        ).first()
        if found is not None:
            name = user_name(user_id)
            raise FailedPrecondition(
                f"{name} already has data ({table.name}): an import loads only into a user "
                "without data; erase it first (DeleteUserData; mnemo users erase) or import into "
                "another user (mnemo import --as-user, which rewrites the names)",
                reason="IMPORT_TARGET_NOT_EMPTY",
                metadata={"parent": name, "table": table.name},
            )


# ----------------------------------------------------------- conversations


def _history_revisions(data: UserData) -> dict[str, tuple[int, int]]:
    """Per conversation: (generation, checkpoint sequence) of its history."""
    result: dict[str, tuple[int, int]] = {}
    for checkpoint in data.checkpoints:
        _, latest = result.get(checkpoint.conversation_id, (0, 0))
        result[checkpoint.conversation_id] = (
            checkpoint.generation,
            max(latest, checkpoint.sequence),
        )
    return result


def _conversation_values(
    user_id: str, value: Conversation, count: int, revision: tuple[int, int], now: int
) -> dict[str, Any]:
    generation, checkpoint_seq = revision
    return {
        "user_id": user_id,
        "conversation_id": value.conversation_id,
        "metadata_json": convert.metadata_json(value.metadata),
        "temporary": value.temporary,
        "created_at": _micros(value.create_time, now),
        "updated_at": _micros(value.update_time, now),
        "expire_at": _optional_micros(value.expire_time),
        "message_count": count,
        "generation": generation,
        "checkpoint_seq": checkpoint_seq,
        "etag": _etag(value.etag),
    }


def _load_conversations(conn: Connection, user_id: str, data: UserData, now: int) -> dict[str, int]:
    """Insert the conversations (and the default one if it has working
    memory); their surrogate keys by conversation id."""
    counts = Counter(m.conversation_id for m in data.messages)
    revisions = _history_revisions(data)
    values = [
        _conversation_values(
            user_id, c, counts[c.conversation_id], revisions.get(c.conversation_id, (1, 0)), now
        )
        for c in data.conversations
    ]
    if any(s.conversation_id == "" for s in data.states):
        values.insert(0, _conversation_values(user_id, Conversation(user_id, ""), 0, (1, 0), now))
    if not values:
        return {}
    inserted = conn.execute(
        insert(conversations).returning(
            conversations.c.id, conversations.c.conversation_id, sort_by_parameter_order=True
        ),
        values,
    ).all()
    return {row.conversation_id: row.id for row in inserted}


def _checkpoint_values(
    user_id: str, pks: dict[str, int], checkpoint: CompactionCheckpoint, now: int
) -> dict[str, Any]:
    return {
        "conversation_pk": pks[checkpoint.conversation_id],
        "generation": checkpoint.generation,
        "seq": checkpoint.sequence,
        "user_id": user_id,
        "covered": checkpoint.covered,
        "replacement_json": codec.dumps(checkpoint.replacement),
        "run_id": checkpoint.run_id,
        "created_at": _micros(checkpoint.create_time, now),
    }


def _load_histories(
    conn: Connection, user_id: str, data: UserData, pks: dict[str, int], now: int
) -> None:
    """Working memory, messages, checkpoints and failed runs."""
    _insert(
        conn,
        working_memory,
        [
            {
                "conversation_pk": pks[s.conversation_id],
                "user_id": user_id,
                "summary": s.state.summary,
                "recent_json": codec.dumps(s.state.recent),
                "etag": _etag(s.state.etag),
                "updated_at": _micros(s.state.update_time, now),
            }
            for s in data.states
        ],
    )
    _insert(
        conn,
        messages,
        [
            {
                "conversation_pk": pks[m.conversation_id],
                "position": m.message.position,
                "user_id": user_id,
                "run_id": m.message.run_id,
                "turn": m.message.turn,
                "role": m.message.role,
                "message_json": m.message.message_json,
                "text": m.message.text,
                "created_at": convert.to_micros(m.message.create_time),
                # Exports carry the create time when the client set none.
                "event_at": None
                if m.message.event_time in (None, m.message.create_time)
                else _optional_micros(m.message.event_time),
            }
            for m in data.messages
        ],
    )
    _insert(
        conn,
        compaction_checkpoints,
        [_checkpoint_values(user_id, pks, c, now) for c in data.checkpoints if c.sequence > 0],
    )
    _insert(
        conn,
        failed_runs,
        [
            {
                "conversation_pk": pks[f.conversation_id],
                "user_id": user_id,
                "failed_run_id": f.run.failed_run_id,
                "run_id": f.run.run_id,
                "error_message": f.run.error.message,
                "error_code": f.run.error.code,
                "error_details_json": f.run.error.details_json,
                "messages_json": _stored(f.run.messages),
                "created_at": convert.to_micros(f.run.create_time),
            }
            for f in data.failed_runs
        ],
    )


# ----------------------------------------------------------------- memories


def _memory_values(user_id: str, memory: Memory, version: int) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "memory_id": memory.memory_id,
        "key": memory.key,
        "scope": memory.scope.value,
        "conversation_id": memory.conversation_id,
        "source": memory.source.value,
        "text": memory.text,
        "metadata_json": rows.metadata_text(memory.metadata),
        "pinned": memory.pinned,
        "created_at": convert.to_micros(memory.create_time),
        "updated_at": convert.to_micros(memory.update_time),
        "archived_at": _optional_micros(memory.archive_time),
        # An export without event times (older servers): the create time.
        "event_at": convert.to_micros(memory.event_time or memory.create_time),
        # An export without validity (older servers): an archived entry was
        # valid until it was archived.
        "valid_until": _optional_micros(memory.valid_until or memory.archive_time),
        "fingerprint": sameness.fingerprint(memory.text),
        "etag": _etag(memory.etag),
        "version": version,
        "search_document": fts.search_document(user_id, memory.conversation_id, memory.text),
    }


def _candidate_values(user_id: str, candidate: MemoryCandidate, now: int) -> dict[str, Any]:
    draft = CandidateDraft(
        candidate_id=candidate.candidate_id,
        draft=candidate.draft,
        conversation_id=candidate.conversation_id,
        run_id=candidate.run_id,
        turn=candidate.turn,
        extractor=candidate.extractor,
    )
    pending = candidate.state is CandidateState.PENDING
    return candidate_values(user_id, draft, convert.to_micros(candidate.create_time)) | {
        "state": candidate.state.value,
        "resolved_at": None if pending else now,
        "saved_memory_id": candidate.saved_memory_id,
    }


def _load_memories(tx: Tx, user_id: str, data: UserData, now: int) -> None:
    """Entries (indexed for full text when live), versions, vectors (an
    entry without one joins the embedding backlog), tombstones and
    candidates."""
    conn = tx.conn
    if data.memories or data.tombstones or data.candidates:
        # As a memory write would (``consent.lock_for_memory``); recall reads
        # the vectors only of a user who has this row.
        conn.execute(insert(memory_user_state).values(user_id=user_id, vectors_version=now))
    if data.memories:
        versions = Counter(v.memory.memory_id for v in data.versions)
        values = [_memory_values(user_id, m, versions[m.memory_id] + 1) for m in data.memories]
        pks: list[int] = list(
            conn.execute(
                insert(memories).returning(memories.c.id, sort_by_parameter_order=True), values
            ).scalars()
        )
        fts.index_inserted(conn, user_id, pks, values)
        by_id = {m.memory_id: pk for m, pk in zip(data.memories, pks, strict=True)}
        _insert(
            conn,
            memory_versions,
            [
                {
                    "memory_pk": by_id[v.memory.memory_id],
                    "version": v.version,
                    "user_id": user_id,
                    "text": v.memory.text,
                    "metadata_json": rows.metadata_text(v.memory.metadata),
                    "pinned": v.memory.pinned,
                    "etag": _etag(v.memory.etag),
                    "updated_at": convert.to_micros(v.memory.update_time),
                    "replaced_at": _micros(v.memory.archive_time, now),
                }
                for v in data.versions
            ],
        )
        _insert(
            conn,
            memory_embeddings,
            [
                vector_row(by_id[m.memory_id], user_id, m.embedding)
                for m in data.memories
                if m.embedding is not None
            ],
        )
        vectors.queue(
            tx, user_id, [by_id[m.memory_id] for m in data.memories if m.embedding is None]
        )
    _insert(
        conn,
        memory_tombstones,
        [
            {
                "user_id": user_id,
                "memory_id": t.memory_id,
                "key": t.key,
                "deleted_at": convert.to_micros(t.delete_time),
            }
            for t in data.tombstones
        ],
    )
    _insert(conn, memory_candidates, [_candidate_values(user_id, c, now) for c in data.candidates])


# --------------------------------------------------------------- governance


def _load_governance(conn: Connection, user_id: str, data: UserData) -> None:
    """Consent and settings (one ``user_settings`` row, with the defaults of
    what was never set) and events (of the user's tenant)."""
    consent, settings = data.consent, data.memory_settings
    if consent is not None or settings is not None:
        conn.execute(
            insert(user_settings).values(
                user_id=user_id,
                consent_state=(consent or Consent(user_id)).state.value,
                policy_version="" if consent is None else consent.policy_version,
                consent_updated_at=None
                if consent is None
                else _optional_micros(consent.update_time),
                memory_enabled=True if settings is None else settings.enabled,
                settings_etag="" if settings is None else _etag(settings.etag),
                settings_updated_at=None
                if settings is None
                else _optional_micros(settings.update_time),
            )
        )
    if data.events:
        tenant = conn.execute(
            select(users.c.tenant_id).where(users.c.user_id == user_id)
        ).scalar_one()
        _insert(
            conn,
            events,
            [
                {
                    "user_id": user_id,
                    "tenant_id": tenant,
                    "event_id": e.event_id,
                    "type": e.type.value,
                    "attributes_json": json.dumps(
                        e.attributes, sort_keys=True, separators=(",", ":")
                    ),
                    "created_at": convert.to_micros(e.create_time),
                }
                for e in data.events
            ],
        )


# -------------------------------------------------------------------- all


def _with_etags(data: UserData, now: int) -> UserData:
    """``data`` with the etags and times the import stores where it has none
    (so that the changes carry what was stored)."""
    at = convert.to_datetime(now)
    counts = Counter(m.conversation_id for m in data.messages)
    return dataclasses.replace(
        data,
        conversations=tuple(
            dataclasses.replace(
                c,
                etag=_etag(c.etag),
                create_time=c.create_time or at,
                update_time=c.update_time or at,
                message_count=counts[c.conversation_id],
            )
            for c in data.conversations
        ),
        states=tuple(
            dataclasses.replace(
                s,
                state=dataclasses.replace(
                    s.state, etag=_etag(s.state.etag), update_time=s.state.update_time or at
                ),
            )
            for s in data.states
        ),
        memories=tuple(dataclasses.replace(m, etag=_etag(m.etag)) for m in data.memories),
        documents=tuple(dataclasses.replace(d, etag=_etag(d.etag)) for d in data.documents),
        memory_settings=None
        if data.memory_settings is None
        else dataclasses.replace(data.memory_settings, etag=_etag(data.memory_settings.etag)),
    )


def _changes(user_id: str, data: UserData) -> list[NewChange]:
    """One change per imported resource (see the module doc)."""
    feed: list[NewChange] = []
    if data.consent is not None:
        feed.append(change_log.consent_upserted(data.consent))
    if data.memory_settings is not None:
        feed.append(change_log.settings_upserted(data.memory_settings))
    feed += [change_log.conversation_upserted(c) for c in data.conversations]

    def key(conversation_id: str) -> ConversationKey:
        return ConversationKey(user_id, conversation_id)

    feed += [change_log.memory_state_upserted(key(s.conversation_id), s.state) for s in data.states]
    feed += [change_log.message_appended(key(m.conversation_id), m.message) for m in data.messages]
    feed += [
        change_log.failed_run_recorded(key(f.conversation_id), f.run) for f in data.failed_runs
    ]
    feed += [change_log.memory_upserted(m) for m in data.memories]
    feed += [change_log.memory_deleted(t) for t in data.tombstones]
    feed += [change_log.candidate_upserted(c) for c in data.candidates]
    feed += [change_log.upsert(d.name, document_rows.slim(d)) for d in data.documents]
    feed += graph_checkpoints.changes(user_id, data.graph_checkpoints)
    return feed


@unit(ImportUserData)
def import_user(tx: Tx, command: ImportUserData) -> tuple[str, ...]:
    """Load the data into a user without data (see the module doc); the
    record kinds not applied because the user's own survived an erasure
    (``consent``, ``memory_settings``). Raises
    ``FailedPrecondition(IMPORT_TARGET_NOT_EMPTY)``, ``NotFound`` (a user of
    another tenant)."""
    user_id, data, conn = command.user_id, command.data, tx.conn
    now = convert.now_micros()
    ensure_user(tx, command.caller, user_id, now)
    conn.execute(select(users.c.user_id).where(users.c.user_id == user_id).with_for_update())
    _check_empty(conn, user_id)
    skipped: tuple[str, ...] = ()
    if consent_rows.get_decision(conn, user_id) is not None:
        skipped = tuple(kind for kind in _DECISION_KINDS if getattr(data, kind) is not None)
        data = dataclasses.replace(data, consent=None, memory_settings=None)
    data = _with_etags(data, now)
    pks = _load_conversations(conn, user_id, data, now)
    _load_histories(conn, user_id, data, pks, now)
    _load_memories(tx, user_id, data, now)
    _load_governance(conn, user_id, data)
    _insert(conn, documents, [document_rows.values(d) for d in data.documents])
    graph_checkpoints.load(conn, user_id, data.graph_checkpoints, now)
    change_log.append(tx, user_id, _changes(user_id, data))
    live = sum(1 for m in data.memories if m.archive_time is None)
    grew(
        tx,
        {
            "conversations": len(data.conversations),
            "messages": len(data.messages),
            "memories": len(data.memories) + len(data.versions),
            "memory_terms": live,
            "memory_embeddings": sum(1 for m in data.memories if m.embedding is not None),
        },
    )
    return skipped
