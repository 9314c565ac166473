"""``SqlStore``: Mnemo's SQL store, composed of one part per area.

Writes are commands (``domain.commands``): ``execute`` runs the unit of work
registered for the command's type (``transactions.units``; the units live in
the area modules imported below) through ``Database.write``, idempotent when
the command carries a request id. Reads go to the area parts, each
implementing one port of ``domain.ports``:

==================  ========================  =======================================
attribute           class                     ports
==================  ========================  =======================================
``users``           ``SqlUserStore``          ``UserStore``
``conversations``   ``SqlConversationStore``  ``WorkingMemoryStore``, ``ConversationStore``
``memories``        ``SqlMemoryStore``        ``MemoryStore``
``governance``      ``SqlGovernanceStore``    ``GovernanceStore``
``feed``            ``SqlChangeStore``        ``ChangeStore``
``user_data``       ``SqlUserData``           ``UserDataStore``
``checkpoints``     ``SqlCheckpointStore``    ``CheckpointStore``
``embeddings``      ``SqlEmbeddingStore``     ``EmbeddingStore``
==================  ========================  =======================================

``SqlStore`` itself is the ``CommandStore``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from mnemo_server.domain.commands import Command, Written
from mnemo_server.store.app_state.store import SqlAppStateStore
from mnemo_server.store.checkpoints import writes as checkpoint_writes
from mnemo_server.store.checkpoints.store import SqlCheckpointStore
from mnemo_server.store.conversations import compaction, conversation, messages, working_memory
from mnemo_server.store.conversations.store import SqlConversationStore
from mnemo_server.store.documents import writes as document_writes
from mnemo_server.store.documents.store import SqlDocumentStore
from mnemo_server.store.feed.store import SqlChangeStore
from mnemo_server.store.governance import consent
from mnemo_server.store.governance.store import SqlGovernanceStore
from mnemo_server.store.memories import candidates, erase, update, writes
from mnemo_server.store.memories.embedding_store import SqlEmbeddingStore
from mnemo_server.store.memories.store import SqlMemoryStore
from mnemo_server.store.memories.vector_cache import VectorCache
from mnemo_server.store.memories.vectors import EmbedLater
from mnemo_server.store.transactions import units
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.transactions.idempotency import DEFAULT_WINDOW, prune_records
from mnemo_server.store.user_data import erase as user_erase
from mnemo_server.store.user_data import load
from mnemo_server.store.user_data.store import SqlUserData
from mnemo_server.store.users import SqlUserStore

__all__ = ["UNIT_MODULES", "SqlStore"]

R = TypeVar("R")

UNIT_MODULES = (
    working_memory,
    conversation,
    messages,
    compaction,
    writes,
    update,
    erase,
    candidates,
    consent,
    user_erase,
    load,
    document_writes,
    checkpoint_writes,
)
"""The modules whose ``@units.unit`` functions carry out the commands
(imported here so that every unit is registered before the first write)."""


class SqlStore:
    """The ``CommandStore``, and the area parts named in the module docstring.

    ``vector_cache``: the process's cache of users' vector matrices
    (``vector_cache.VectorCache``; a new one by default), shared by recall
    and by erasure.
    ``idempotency_window``: how long a request's recorded result answers its
    retries (``transactions.idempotency``).
    ``embed_later``: this server computes the vectors that writes leave out;
    then the entries a write leaves without a vector join the embedding
    backlog, and ``vectors_queued`` (the embedding worker's hook) is called
    with their user once the write committed (``vectors.EmbedLater``, which
    runs every command of this store and of ``user_data``).
    """

    def __init__(
        self,
        db: Database,
        *,
        vector_cache: VectorCache | None = None,
        idempotency_window: timedelta = DEFAULT_WINDOW,
        embed_later: bool = False,
    ) -> None:
        self.database = db
        self._later = EmbedLater(embeds=embed_later)
        self.vector_cache = vector_cache if vector_cache is not None else VectorCache()
        self._window_micros = idempotency_window // timedelta(microseconds=1)
        self.users = SqlUserStore(db)
        self.conversations = SqlConversationStore(db)
        self.memories = SqlMemoryStore(db, vector_cache=self.vector_cache)
        self.governance = SqlGovernanceStore(db)
        self.feed = SqlChangeStore(db)
        self.user_data = SqlUserData(db, vector_cache=self.vector_cache, later=self._later)
        self.documents = SqlDocumentStore(db)
        self.checkpoints = SqlCheckpointStore(db)
        self.app_states = SqlAppStateStore(db)
        self.embeddings = SqlEmbeddingStore(db)

    @property
    def vectors_queued(self) -> Callable[[str], None] | None:
        """The embedding worker's hook (``EmbedLater.queued``)."""
        return self._later.queued

    @vectors_queued.setter
    def vectors_queued(self, hook: Callable[[str], None] | None) -> None:
        self._later.queued = hook

    async def execute(self, command: Command[R]) -> Written[R]:
        value, cursor = await self._later.write(
            self.database,
            units.run(command, window_micros=self._window_micros),
            weight=command.weight,
            alone=command.alone,
        )
        return Written(value, cursor)

    async def prune_idempotency_records(self, *, older_than_micros: int, limit: int) -> int:
        """Delete up to ``limit`` idempotency records made before
        ``older_than_micros`` (their window has passed: a request with such a
        request_id is new); how many were deleted."""
        pruned, _ = await self.database.write(
            lambda tx: prune_records(tx.conn, older_than_micros, limit)
        )
        return pruned
