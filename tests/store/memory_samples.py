"""Builders and bulk loading for the long-term memory storage tests."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryDraft,
    MemoryListQuery,
    MemoryScope,
    SavedMemory,
)
from mnemo_server.store.composed import SqlStore
from tests.store.writes import create_memories

BATCH = 500


def draft(
    text: str,
    *,
    key: str = "",
    conversation: str = "",
    pinned: bool = False,
    metadata: dict[str, str] | None = None,
    vector: Sequence[float] | None = None,
    model: str = "test-model",
) -> MemoryDraft:
    """A draft; conversation-scoped when ``conversation`` is given."""
    return MemoryDraft(
        text=text,
        key=key,
        scope=MemoryScope.CONVERSATION if conversation else MemoryScope.IDENTITY,
        conversation_id=conversation,
        pinned=pinned,
        metadata=metadata or {},
        embedding=None if vector is None else Embedding(model, tuple(vector)),
    )


async def save(store: SqlStore, memory_id: str, item: MemoryDraft, user: str = "alice") -> Memory:
    (saved,) = await create_memories(store, user, [(memory_id, item)])
    return saved.memory


async def bulk_create(
    store: SqlStore, user: str, items: Sequence[tuple[str, MemoryDraft]]
) -> list[SavedMemory]:
    """``items`` saved in transactions of ``BATCH`` entries."""
    saved: list[SavedMemory] = []
    for start in range(0, len(items), BATCH):
        saved.extend(await create_memories(store, user, items[start : start + BATCH]))
    return saved


async def all_memories(
    store: SqlStore, user: str = "alice", *, include_archived: bool = True
) -> list[Memory]:
    """Every entry of ``user``, newest first, through every page."""
    found: list[Memory] = []
    after: tuple[object, ...] | None = None
    while True:
        page = await store.memories.list_memories(
            user, MemoryListQuery(limit=7, after=after, include_archived=include_archived)
        )
        found.extend(page.items)
        if page.next_after is None:
            return found
        after = page.next_after
