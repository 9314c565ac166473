"""Long-term memory use cases (gecx-chat): save, read, list, update, delete and
the audit trail of entries, on top of ``MemoryStore``.

Input is validated at the edge (``domain.limits``, names; the edge also
picks generated memory ids with ``new_id``). Saves never wait for the
server's embedder: when one is configured, an entry saved (or given new
text) without a client vector is queued in the save's transaction and
embedded in the background (``embedding_worker``). Without an embedder,
entries keep only the vectors clients send (an update of the text then keeps
the old vector unless the client sends a new one). ``QueryEmbedding`` embeds
recall's queries.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.memories import CreateMemories, UpdateMemory
from mnemo_server.domain.embedding import (
    Embedder,
    embedder_failed,
    embedder_unavailable,
    query_vectors,
)
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryListQuery,
    NearDuplicateProbe,
    SavedMemory,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.ports import CommandStore, MemoryStore
from mnemo_server.domain.sameness import NEAR_DUPLICATE_THRESHOLD
from mnemo_server.domain.usecases.conversations import new_conversation_id


def new_id() -> str:
    """A fresh memory or candidate id: the same form as generated conversation ids."""
    return new_conversation_id()


QUERY_CACHE_SIZE = 1024
"""Query vectors kept per process (about 3 KB each with 384 dimensions)."""


class QueryEmbedding:
    """The configured embedder's vectors of query texts, cached."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        # Query vectors of recent query texts (an assistant repeats its queries).
        self._queries: OrderedDict[str, Embedding] = OrderedDict()

    async def embed_query(self, text: str) -> Embedding:
        """The configured embedder's query vector of ``text`` (``query_vectors``),
        from the cache of the last ``QUERY_CACHE_SIZE`` query texts when there.

        Runs the embedder in a worker thread: it may be a caller's own class of
        unknown cost, and must not stall the server's event loop. Raises
        ``EMBEDDER_UNAVAILABLE`` without an embedder, ``EMBEDDER_FAILED``
        (``Unavailable``) when the embedder fails."""
        embedder = self.embedder
        if embedder is None:
            raise embedder_unavailable()
        cached = self._queries.get(text)
        if cached is not None:
            self._queries.move_to_end(text)
            return cached
        try:
            (vector,) = await asyncio.to_thread(query_vectors, embedder, [text])
        except Exception as error:  # the embedder's own code or its provider
            raise embedder_failed(error) from error
        embedding = Embedding(embedder.model, tuple(vector))
        self._queries[text] = embedding
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return embedding


@dataclass(frozen=True)
class NearDuplicates:
    """The server's near-duplicate check (``domain.sameness``): on for every
    save unless a request says otherwise (``enabled``), at ``threshold``.
    ``settle`` waits (bounded) until the user's entries saved earlier have
    their vectors, so that the check compares with them too."""

    embedder: Embedder | None = None
    enabled: bool = False
    threshold: float = NEAR_DUPLICATE_THRESHOLD
    settle: Callable[[str], Awaitable[bool]] | None = None


class Memories:
    """Entries of a user: append-only saves with keyed supersede, and their history."""

    def __init__(
        self, commands: CommandStore, store: MemoryStore, near: NearDuplicates | None = None
    ) -> None:
        self._commands = commands
        self._store = store
        self._near = near or NearDuplicates()

    async def create(self, command: CreateMemories) -> Written[tuple[SavedMemory, ...]]:
        """Save the drafts: an exact duplicate of a live entry stores nothing,
        a keyed save takes its place in its chain by event time; with the
        near-duplicate check on (the request's ``near_duplicates``, else the
        server's), a draft whose text the embedder places within the
        threshold of a live entry of its scope is a duplicate too (and the
        saved drafts keep the vectors computed for the check).

        Raises ``AlreadyExists`` (id taken, also by a deleted entry),
        ``EMBEDDING_DIMENSION_MISMATCH``, ``REQUEST_ID_REUSED``, the memory gate's
        ``FailedPrecondition``; with the check on, ``EMBEDDER_UNAVAILABLE``
        (no embedder) and ``EMBEDDER_FAILED``.
        """
        wanted = command.near_duplicates
        if wanted if wanted is not None else self._near.enabled:
            command = replace(command, near=await self._probe(command))
        return await self._commands.execute(command)

    async def _probe(self, command: CreateMemories) -> NearDuplicateProbe:
        embedder = self._near.embedder
        if embedder is None:
            raise embedder_unavailable()
        texts = [draft.text for _, draft in command.drafts]
        embedding = asyncio.to_thread(embedder.embed, texts)
        try:
            if self._near.settle is None:
                vectors = await embedding
            else:
                vectors, _ = await asyncio.gather(embedding, self._near.settle(command.user_id))
        except Exception as error:  # the embedder's own code or its provider
            raise embedder_failed(error) from error
        return NearDuplicateProbe(
            self._near.threshold, tuple(Embedding(embedder.model, tuple(v)) for v in vectors)
        )

    async def get(self, user_id: str, memory_id: str) -> Memory:
        """Archived or not. Raises ``NotFound``."""
        return await self._store.get_memory(user_id, memory_id)

    async def list(self, user_id: str, query: MemoryListQuery) -> Page[Memory]:
        """Newest first; without ``include_archived`` only live entries."""
        return await self._store.list_memories(user_id, query)

    async def update(self, command: UpdateMemory) -> Written[Memory]:
        """Apply the change; the previous version stays in the history.

        Raises ``NotFound``, ``ETAG_MISMATCH``, ``EMBEDDING_DIMENSION_MISMATCH``.
        """
        return await self._commands.execute(command)

    async def versions(
        self, user_id: str, memory_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Memory]:
        """The audit trail, newest first. Raises ``NotFound``."""
        return await self._store.list_memory_versions(user_id, memory_id, limit=limit, after=after)
