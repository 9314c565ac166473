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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from mnemo_server.domain.memory_models import MemoryDraft
from mnemo_server.store.memories import text_index as fts
from mnemo_server.store.schema import memories
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


def is_same(entry: LiveEntry, draft: MemoryDraft, fingerprint: str) -> bool:
    """``draft`` (whose text has ``fingerprint``) states ``entry``'s fact."""
    return (
        entry.fingerprint == fingerprint
        and entry.scope == draft.scope.value
        and entry.conversation_id == draft.conversation_id
        and (not draft.key or entry.key == draft.key)
    )


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
                .with_only_columns(
                    memories.c.memory_id,
                    memories.c.fingerprint,
                    memories.c.scope,
                    memories.c.conversation_id,
                    memories.c.key,
                )
                .where(
                    memories.c.user_id == user_id,
                    memories.c.archived_at.is_(None),
                    fts.one_of(conn, memories.c.fingerprint, chunk, memories.c.fingerprint.type),
                )
                .order_by(memories.c.id.desc())
            )
        )
    return found


def first_same(
    entries: Iterable[LiveEntry], draft: MemoryDraft, fingerprint: str, gone: set[str]
) -> LiveEntry | None:
    """The first of ``entries`` (not in ``gone``: archived by this call) that
    ``draft`` duplicates, or ``None``."""
    for entry in entries:
        if entry.memory_id not in gone and is_same(entry, draft, fingerprint):
            return entry
    return None
