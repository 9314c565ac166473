"""Long-term memory rows to domain objects, resource names and the errors
that name them (``users/{user}/memories/{memory}``,
``users/{user}/memoryCandidates/{candidate}``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, FromClause, Row

from mnemo_server.domain.errors import AlreadyExists, Entry, FailedPrecondition, NotFound, Part
from mnemo_server.domain.memory_models import (
    CandidateState,
    Embedding,
    Memory,
    MemoryCandidate,
    MemoryDraft,
    MemoryScope,
    MemorySource,
    MemoryTombstone,
)
from mnemo_server.domain.names import user_name
from mnemo_server.domain.vectors import decode_vector
from mnemo_server.store.rows import to_datetime
from mnemo_server.store.schema import memories, memory_embeddings

MEMORY_COLUMNS: tuple[ColumnElement[Any], ...] = (
    *memories.c,
    memory_embeddings.c.model.label("embedding_model"),
    memory_embeddings.c.vector.label("embedding_vector"),
)
"""What ``memory(row)`` reads: the entry and its vector, if any (select them
``FROM`` ``MEMORY_FROM``)."""

MEMORY_FROM: FromClause = memories.outerjoin(memory_embeddings)  # on (user_id, memory_pk)


def memory_name(user_id: str, memory_id: str) -> str:
    return f"{user_name(user_id)}/memories/{memory_id}"


def candidate_name(user_id: str, candidate_id: str) -> str:
    return f"{user_name(user_id)}/memoryCandidates/{candidate_id}"


def memory_not_found(user_id: str, memory_id: str) -> NotFound:
    name = memory_name(user_id, memory_id)
    return NotFound(f"{name} does not exist", metadata={"name": name}, reason="NOT_FOUND")


def memory_id_taken(
    user_id: str, memory_id: str, index: int, same_as: int | None = None
) -> AlreadyExists:
    """Draft ``index``'s id is that of an entry or a tombstone, or (``same_as``)
    the id an earlier draft of the same write chose. The API layer names the
    request's field (``Entry``)."""
    name = memory_name(user_id, memory_id)
    what = "already exists (or existed and was deleted)" if same_as is None else "is named twice"
    return AlreadyExists(
        f"{name} {what}; choose another memory id",
        reason="ALREADY_EXISTS",
        metadata={"name": name},
        entry=Entry(Part.MEMORY_ID, index, same_as),
    )


def candidate_not_found(user_id: str, candidate_id: str) -> NotFound:
    name = candidate_name(user_id, candidate_id)
    return NotFound(f"{name} does not exist", metadata={"name": name}, reason="NOT_FOUND")


def candidate_id_taken(user_id: str, candidate_id: str) -> AlreadyExists:
    name = candidate_name(user_id, candidate_id)
    return AlreadyExists(
        f"{name} already exists; choose another candidate id",
        metadata={"name": name},
        reason="ALREADY_EXISTS",
    )


def candidate_resolved(
    user_id: str, candidate_id: str, state: str, why: str = ""
) -> FailedPrecondition:
    name = candidate_name(user_id, candidate_id)
    return FailedPrecondition(
        f"{name} is already {state}{why}; only a pending candidate can change",
        reason="CANDIDATE_RESOLVED",
        metadata={"name": name, "state": state},
    )


def metadata_text(metadata: dict[str, str]) -> str:
    """String metadata as stored: compact JSON, keys sorted."""
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _embedding(model: str | None, vector: bytes | None) -> Embedding | None:
    if model is None or vector is None:
        return None
    return Embedding(model, decode_vector(vector))


def memory(row: Any) -> Memory:
    """A row of ``MEMORY_COLUMNS`` (a SQLAlchemy row, a ``store.engine.statements``
    row or a mapping of its columns) as an entry (with its vector, if any)."""
    if isinstance(row, Mapping):
        m: Mapping[Any, Any] = row
    elif isinstance(row, Row):
        m = row._mapping
    else:
        m = row._asdict()
    return Memory(
        memory_id=m["memory_id"],
        user_id=m["user_id"],
        text=m["text"],
        create_time=to_datetime(m["created_at"]),
        update_time=to_datetime(m["updated_at"]),
        key=m["key"],
        scope=MemoryScope(m["scope"]),
        conversation_id=m["conversation_id"],
        source=MemorySource(m["source"]),
        metadata=json.loads(m["metadata_json"]),
        pinned=bool(m["pinned"]),
        archive_time=None if m["archived_at"] is None else to_datetime(m["archived_at"]),
        etag=m["etag"],
        embedding=_embedding(m.get("embedding_model"), m.get("embedding_vector")),
        event_time=to_datetime(m["event_at"]),
        valid_until=None if m["valid_until"] is None else to_datetime(m["valid_until"]),
    )


def tombstone(row: Any) -> MemoryTombstone:
    """A ``memory_tombstones`` row."""
    return MemoryTombstone(
        user_id=row.user_id,
        memory_id=row.memory_id,
        key=row.key,
        delete_time=to_datetime(row.deleted_at),
    )


def candidate(row: Any) -> MemoryCandidate:
    """A ``memory_candidates`` row."""
    return MemoryCandidate(
        candidate_id=row.candidate_id,
        user_id=row.user_id,
        draft=MemoryDraft(
            text=row.text,
            key=row.key,
            scope=MemoryScope(row.scope),
            conversation_id=row.memory_conversation_id,
            source=MemorySource(row.source),
            metadata=json.loads(row.metadata_json),
            pinned=bool(row.pinned),
            embedding=_embedding(row.embedding_model, row.embedding),
            event_time=None if row.event_at is None else to_datetime(row.event_at),
        ),
        state=CandidateState(row.state),
        create_time=to_datetime(row.created_at),
        conversation_id=row.conversation_id,
        run_id=row.run_id,
        turn=row.turn,
        extractor=row.extractor,
        saved_memory_id=row.saved_memory_id,
    )
