"""Long-term memory use cases (gecx-chat): save, read, list, update, delete and
the audit trail of entries, on top of ``MemoryStore``.

Input is validated at the edge (``domain.limits``, names; the edge also
picks generated memory ids with ``new_id``); here lives the server-side
embedding: when an ``Embedder`` is
configured, a save (or a proposed candidate) without a client vector gets the
embedder's vector of its text, and an update of the text without a new vector
gets the vector of the new text. Without an embedder, entries keep only the
vectors clients send (an update of the text then keeps the old vector unless
the client sends a new one).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.memories import CreateMemories, UpdateMemory
from mnemo_server.domain.embedding import Embedder, embedder_unavailable, query_vectors
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryChange,
    MemoryDraft,
    MemoryListQuery,
    SavedMemory,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.ports import CommandStore, MemoryStore
from mnemo_server.domain.usecases.conversations import new_conversation_id


def new_id() -> str:
    """A fresh memory or candidate id: the same form as generated conversation ids."""
    return new_conversation_id()


QUERY_CACHE_SIZE = 1024
"""Query vectors kept per process (about 3 KB each with 384 dimensions)."""


class DraftEmbedding:
    """Fills in the vectors the server computes (see the module doc)."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        # Query vectors of recent query texts (an assistant repeats its queries).
        self._queries: OrderedDict[str, Embedding] = OrderedDict()

    async def embed(self, texts: Sequence[str]) -> list[Embedding]:
        """The configured embedder's vectors of ``texts`` (``[]`` without one).

        Runs the embedder in a worker thread: it may be a caller's own class of
        unknown cost, and must not stall the server's event loop.
        """
        embedder = self.embedder
        if embedder is None or not texts:
            return []
        vectors = await asyncio.to_thread(embedder.embed, list(texts))
        return [Embedding(embedder.model, tuple(v)) for v in vectors]

    async def embed_query(self, text: str) -> Embedding:
        """The configured embedder's query vector of ``text`` (``query_vectors``),
        from the cache of the last ``QUERY_CACHE_SIZE`` query texts when there.
        Raises ``EMBEDDER_UNAVAILABLE`` without an embedder."""
        embedder = self.embedder
        if embedder is None:
            raise embedder_unavailable()
        cached = self._queries.get(text)
        if cached is not None:
            self._queries.move_to_end(text)
            return cached
        (vector,) = await asyncio.to_thread(query_vectors, embedder, [text])
        embedding = Embedding(embedder.model, tuple(vector))
        self._queries[text] = embedding
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return embedding

    async def drafts(self, drafts: Sequence[MemoryDraft]) -> list[MemoryDraft]:
        """``drafts`` with the embedder's vector on each one that has none."""
        missing = [i for i, d in enumerate(drafts) if d.embedding is None]
        result = list(drafts)
        if self.embedder is None or not missing:
            return result
        vectors = await self.embed([drafts[i].text for i in missing])
        for i, vector in zip(missing, vectors, strict=True):
            result[i] = replace(drafts[i], embedding=vector)
        return result

    async def change(self, change: MemoryChange) -> MemoryChange:
        """``change`` with the vector of its new text, when it has new text and no vector."""
        if change.text is None or change.embedding is not None or self.embedder is None:
            return change
        (vector,) = await self.embed([change.text])
        return replace(change, embedding=vector)


class Memories:
    """Entries of a user: append-only saves with keyed supersede, and their history."""

    def __init__(
        self, commands: CommandStore, store: MemoryStore, embedder: Embedder | None
    ) -> None:
        self._commands = commands
        self._store = store
        self._embedding = DraftEmbedding(embedder)

    @property
    def embedding(self) -> DraftEmbedding:
        return self._embedding

    async def create(self, command: CreateMemories) -> Written[tuple[SavedMemory, ...]]:
        """Save the drafts with the embedder's vector on each that has none; a
        keyed save archives the live entry of its (scope, conversation, key).

        Raises ``AlreadyExists`` (id taken, also by a deleted entry),
        ``EMBEDDING_DIMENSION_MISMATCH``, ``REQUEST_ID_REUSED``, the memory gate's
        ``FailedPrecondition``.
        """
        embedded = await self._embedding.drafts([draft for _, draft in command.drafts])
        drafts = tuple(
            (memory_id, draft)
            for (memory_id, _), draft in zip(command.drafts, embedded, strict=True)
        )
        return await self._commands.execute(replace(command, drafts=drafts))

    async def get(self, user_id: str, memory_id: str) -> Memory:
        """Archived or not. Raises ``NotFound``."""
        return await self._store.get_memory(user_id, memory_id)

    async def list(self, user_id: str, query: MemoryListQuery) -> Page[Memory]:
        """Newest first; without ``include_archived`` only live entries."""
        return await self._store.list_memories(user_id, query)

    async def update(self, command: UpdateMemory) -> Written[Memory]:
        """Apply the change (new text without a vector gets the embedder's
        vector of it); the previous version stays in the history.

        Raises ``NotFound``, ``ETAG_MISMATCH``, ``EMBEDDING_DIMENSION_MISMATCH``.
        """
        change = await self._embedding.change(command.change)
        return await self._commands.execute(replace(command, change=change))

    async def versions(
        self, user_id: str, memory_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Memory]:
        """The audit trail, newest first. Raises ``NotFound``."""
        return await self._store.list_memory_versions(user_id, memory_id, limit=limit, after=after)
