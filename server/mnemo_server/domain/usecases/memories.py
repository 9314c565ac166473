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
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from mnemo_server.domain.commands import Written
from mnemo_server.domain.commands.memories import CreateMemories, UpdateMemory
from mnemo_server.domain.embedding import (
    embedder_failed,
    embedder_unavailable,
    prompt_vectors,
    query_vectors,
)
from mnemo_server.domain.governance import Access
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryListQuery,
    NearDuplicateProbe,
    SavedMemory,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.ports import CommandStore, GovernanceStore, MemoryStore
from mnemo_server.domain.sameness import NEAR_DUPLICATE_THRESHOLD
from mnemo_server.domain.usecases.conversations import new_conversation_id
from mnemo_server.domain.usecases.embedder_calls import EmbedderCalls

log = logging.getLogger(__name__)


def new_id() -> str:
    """A fresh memory or candidate id: the same form as generated conversation ids."""
    return new_conversation_id()


QUERY_CACHE_SIZE = 1024
"""Query vectors kept per process (about 3 KB each with 384 dimensions)."""


class QueryEmbedding:
    """The configured embedder's vectors of query texts, cached; ``calls``
    runs the embedder (``None``: the server has none)."""

    def __init__(self, calls: EmbedderCalls | None) -> None:
        self.embedder = None if calls is None else calls.embedder
        self._calls = calls
        # Query vectors of recent query texts (an assistant repeats its queries).
        self._queries: OrderedDict[str, Embedding] = OrderedDict()

    def cached(self, text: str) -> bool:
        """Whether ``embed_query(text)`` would answer from the cache (no
        text would reach the embedder)."""
        return text in self._queries

    async def embed_query(self, text: str) -> Embedding:
        """The configured embedder's query vector of ``text`` (``query_vectors``:
        checked), from the cache of the last ``QUERY_CACHE_SIZE`` query texts
        when there.

        Runs the embedder on ``calls``' bounded pool: it may be a caller's own
        class of unknown cost or a slow provider, and must not stall the
        server's event loop or its shared executor. Raises
        ``EMBEDDER_UNAVAILABLE`` without an embedder, ``EMBEDDER_FAILED``
        (``Unavailable``) when the embedder fails, is too slow or answers a
        vector that is not one of its model's."""
        calls = self._calls
        if calls is None:
            raise embedder_unavailable()
        cached = self._queries.get(text)
        if cached is not None:
            self._queries.move_to_end(text)
            return cached
        try:
            (vector,) = await calls.run(query_vectors, [text])
        except Exception as error:  # the embedder's own code or its provider
            log.warning("embedding a query failed: %s", error)
            raise embedder_failed(error) from error
        embedding = Embedding(calls.embedder.model, vector)
        self._queries[text] = embedding
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return embedding


@dataclass(frozen=True)
class NearDuplicates:
    """The server's near-duplicate check (``domain.sameness``): on for every
    save unless a request says otherwise (``enabled``), at ``threshold``,
    with ``calls`` running the server's embedder (``None``: it has none).
    ``settle`` waits (bounded) until the user's entries saved earlier have
    their vectors, so that the check compares with them too."""

    calls: EmbedderCalls | None = None
    enabled: bool = False
    threshold: float = NEAR_DUPLICATE_THRESHOLD
    settle: Callable[[str], Awaitable[bool]] | None = None


class Memories:
    """Entries of a user: append-only saves with keyed supersede, and their history."""

    def __init__(
        self,
        commands: CommandStore,
        store: MemoryStore,
        governance: GovernanceStore,
        near: NearDuplicates | None = None,
    ) -> None:
        self._commands = commands
        self._store = store
        self._governance = governance
        self._near = near or NearDuplicates()

    async def create(self, command: CreateMemories) -> Written[tuple[SavedMemory, ...]]:
        """Save the drafts: an exact duplicate of a live entry stores nothing,
        a keyed save takes its place in its chain by event time; with the
        near-duplicate check on (the request's ``near_duplicates``, else the
        server's), a draft whose text the embedder places within the
        threshold of a live entry of its scope is a duplicate too (and the
        saved drafts keep the vectors computed for the check). No text goes
        to the embedder while a memory gate refuses the save: the gate is
        read first, and a closed one answers as the save would.

        Raises ``AlreadyExists`` (id taken, also by a deleted entry),
        ``EMBEDDING_DIMENSION_MISMATCH``, ``REQUEST_ID_REUSED``, the memory gate's
        ``FailedPrecondition``; with the check on, ``EMBEDDER_UNAVAILABLE``
        (no embedder) and ``EMBEDDER_FAILED``.
        """
        wanted = command.near_duplicates
        if wanted if wanted is not None else self._near.enabled:
            if await self._gate_closed(command):
                # The save's own transaction reads the gate again and refuses it.
                return await self._commands.execute(command)
            command = replace(command, near=await self._probe(command))
        return await self._commands.execute(command)

    async def _gate_closed(self, command: CreateMemories) -> bool:
        conversations = [
            *command.origin_conversation_ids,
            *(draft.conversation_id for _, draft in command.drafts),
        ]
        gate = await self._governance.memory_gate(command.user_id, conversations, Access.WRITE)
        return gate is not None

    async def _probe(self, command: CreateMemories) -> NearDuplicateProbe:
        calls = self._near.calls
        if calls is None:
            raise embedder_unavailable()
        texts = [draft.text for _, draft in command.drafts]
        embedding = calls.run(prompt_vectors, texts)
        try:
            if self._near.settle is None:
                vectors = await embedding
            else:
                vectors, _ = await asyncio.gather(embedding, self._near.settle(command.user_id))
        except Exception as error:  # the embedder's own code or its provider
            log.warning("the near-duplicate check could not embed %d texts: %s", len(texts), error)
            raise embedder_failed(error, "the memory's text") from error
        model = calls.embedder.model
        return NearDuplicateProbe(self._near.threshold, tuple(Embedding(model, v) for v in vectors))

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
