"""Exact duplicates among a user's live entries (``domain.sameness``).

A draft is the same fact as a live entry when their texts have the same
fingerprint, they have the same scope and conversation, and, for a keyed
draft, the entry is the current entry of the draft's key (a keyed save
identical to its current entry keeps the current one; it never borrows an
entry of another key, which would leave its own chain unsaved). An unkeyed
draft is the same as any live entry of its scope and conversation, keyed or
not. Found through ``ix_memories_live_fingerprint``: one index lookup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, select

from mnemo_server.domain.memory_models import Embedding, MemoryDraft
from mnemo_server.domain.vectors import decode_vector
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.schema import memories, memory_embeddings
from mnemo_server.store.transactions.tx import Tx

_CHUNK = 500


@dataclass(frozen=True)
class LiveEntry:
    """What sameness compares of a live entry."""

    memory_id: str
    fingerprint: str
    scope: str
    conversation_id: str
    key: str


LIVE_COLUMNS = (
    memories.c.memory_id,
    memories.c.fingerprint,
    memories.c.scope,
    memories.c.conversation_id,
    memories.c.key,
)
"""The columns of a ``LiveEntry``, in its order."""


def same_place(entry: LiveEntry, draft: MemoryDraft) -> bool:
    """``entry`` is where ``draft`` would be a duplicate: its scope and
    conversation, and its key for a keyed draft."""
    return (
        entry.scope == draft.scope.value
        and entry.conversation_id == draft.conversation_id
        and (not draft.key or entry.key == draft.key)
    )


def is_same(entry: LiveEntry, draft: MemoryDraft, fingerprint: str) -> bool:
    """``draft`` (whose text has ``fingerprint``) states ``entry``'s fact."""
    return entry.fingerprint == fingerprint and same_place(entry, draft)


def live_entries(conn: Connection | Tx, user_id: str, prints: Sequence[str]) -> list[LiveEntry]:
    """The user's live entries whose fingerprint is one of ``prints``,
    newest first."""
    if isinstance(conn, Tx):
        conn = conn.conn
    found: list[LiveEntry] = []
    unique = sorted(set(prints))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        found += (
            LiveEntry(*row)
            for row in conn.execute(
                memories.select()
                .with_only_columns(*LIVE_COLUMNS)
                .where(
                    memories.c.user_id == user_id,
                    memories.c.archived_at.is_(None),
                    fts.one_of(conn, memories.c.fingerprint, chunk, memories.c.fingerprint.type),
                )
                .order_by(memories.c.id.desc())
            )
        )
    return found


UnitVector = npt.NDArray[np.float64]


def unit_vector(values: Sequence[float]) -> UnitVector | None:
    """``values`` scaled to length 1 (``None`` for a vector that has no
    direction: all zeros, or a value that is not finite). The dot product of
    two of them is their cosine (``domain.vectors.cosine``, the one
    definition of similarity), computed in numpy: the near-duplicate check
    compares a probe with every live vector of the model, and unit vectors
    let it pay each vector's length once, when it is read."""
    vector = np.asarray(values, dtype=np.float64)
    length = float(np.linalg.norm(vector))
    return None if length == 0.0 or not math.isfinite(length) else vector / length


def live_vectors(conn: Connection, user_id: str, model: str) -> list[tuple[LiveEntry, UnitVector]]:
    """The user's live entries with a vector of ``model``, each with its
    unit vector (the near-duplicate check reads them all: it is off unless
    asked for)."""
    found = conn.execute(
        select(*LIVE_COLUMNS, memory_embeddings.c.vector)
        .select_from(memory_embeddings.join(memories))
        .where(
            memory_embeddings.c.user_id == user_id,
            memory_embeddings.c.model == model,
            memories.c.user_id == user_id,
            memories.c.archived_at.is_(None),
        )
        .order_by(memories.c.id.desc())
    ).all()
    pool: list[tuple[LiveEntry, UnitVector]] = []
    for row in found:
        vector = unit_vector(decode_vector(row.vector))
        if vector is not None:
            pool.append((LiveEntry(*row[:5]), vector))
    return pool


def nearest_same(
    pool: Iterable[tuple[LiveEntry, UnitVector]],
    draft: MemoryDraft,
    probe: Embedding,
    threshold: float,
    gone: set[str],
) -> LiveEntry | None:
    """The entry of ``pool`` (not in ``gone``) of ``draft``'s scope,
    conversation (and key, for a keyed draft) whose vector is nearest to
    ``probe`` with a cosine (``domain.vectors.cosine``, as the dot product
    of unit vectors) of at least ``threshold``, or ``None``. A probe or a
    vector of no direction, or of another length, is near nothing."""
    query = unit_vector(probe.values)
    if query is None:
        return None
    best: tuple[float, LiveEntry] | None = None
    for entry, vector in pool:
        if entry.memory_id in gone or not same_place(entry, draft):
            continue
        if len(vector) != len(query):
            continue
        cosine = float(vector @ query)
        if cosine >= threshold and (best is None or cosine > best[0]):
            best = (cosine, entry)
    return None if best is None else best[1]


def first_same(
    entries: Iterable[LiveEntry], draft: MemoryDraft, fingerprint: str, gone: set[str]
) -> LiveEntry | None:
    """The first of ``entries`` (not in ``gone``: archived by this call) that
    ``draft`` duplicates, or ``None``."""
    for entry in entries:
        if entry.memory_id not in gone and is_same(entry, draft, fingerprint):
            return entry
    return None
