"""The narrow storage interfaces the use cases depend on.

Every method is a coroutine and runs in its own transaction (a write shares
it with the other writes of its batch, each in its own savepoint:
``store.transactions.database``). Methods return domain objects and raise
``mnemo_server.domain.errors`` exceptions only; driver errors never escape (a
serialization failure that survives the bounded retries becomes
``Aborted(reason="CONCURRENT_MODIFICATION")``, an unreachable database
``Unavailable``).

Every write of the API is a command (``domain.commands``) that
``CommandStore.execute`` carries out; each command's docstring states what
it does and raises. A command that carries an ``Idempotency`` records its
result in the same transaction: a repeat with the same key and fingerprint
returns the recorded result and writes nothing; the same key with another
fingerprint raises ``FailedPrecondition(reason="REQUEST_ID_REUSED")``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from typing import Protocol, TypeVar

from mnemo_server.domain.changes import ChangePage
from mnemo_server.domain.checkpoints import CheckpointQuery, StoredCheckpoint, ThreadKey
from mnemo_server.domain.commands import Command, Written
from mnemo_server.domain.commands.governance import DeleteUserData, ImportUserData
from mnemo_server.domain.documents import (
    Document,
    DocumentQuery,
    Namespace,
    NamespaceQuery,
    ScoredDocument,
)
from mnemo_server.domain.embedding_backlog import (
    BackfillStep,
    ComputedVector,
    EmbeddingProgress,
    PendingText,
)
from mnemo_server.domain.governance import (
    Access,
    Consent,
    Event,
    EventScope,
    EventType,
    Gate,
    MemorySettings,
    NewEvent,
)
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import (
    Embedding,
    Memory,
    MemoryCandidate,
    MemoryListQuery,
    RecallQuery,
)
from mnemo_server.domain.models import (
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    Keyset,
    MemoryState,
    Page,
    StoredMessage,
)
from mnemo_server.domain.ranking import RecallResult
from mnemo_server.domain.user_data import (
    ErasureReceipt,
    ExportItem,
    ExportSection,
    UserErasure,
)

R = TypeVar("R")


class CommandStore(Protocol):
    """Runs the writes of the API."""

    async def execute(self, command: Command[R]) -> Written[R]:
        """Carry out ``command`` in a write transaction: its result and the
        cursor of the last change it appended (``Written``). Raises what the
        command's docstring names, ``Aborted(CONCURRENT_MODIFICATION)`` and
        ``Unavailable``."""
        ...

    async def prune_idempotency_records(self, *, older_than_micros: int, limit: int) -> int:
        """Delete up to ``limit`` idempotency records made before
        ``older_than_micros`` (their window has passed: a request with such a
        request_id is new); how many were deleted."""
        ...


class UserStore(Protocol):
    """Users and their tenants. A user is created implicitly by its first write,
    in the tenant of the caller making it (``domain.identity.tenant_of_new_users``)."""

    async def tenants_of(self, user_ids: Collection[str]) -> Mapping[str, str]:
        """The tenant of each existing user among ``user_ids`` (``""``: none);
        a user that does not exist is absent."""
        ...


class WorkingMemoryStore(Protocol):
    """Working memory per (user, conversation); the default conversation too."""

    async def get_state(self, key: ConversationKey) -> MemoryState:
        """The state, or an empty ``MemoryState()`` if never written. Never raises NotFound."""
        ...


class ConversationStore(Protocol):
    """Conversations and their canonical history, failed runs and compaction."""

    async def get_conversation(self, user_id: str, conversation_id: str) -> Conversation:
        """Raises ``NotFound``."""
        ...

    async def list_conversations(
        self, user_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Conversation]:
        """Most recently updated first (keyset: update_time desc, conversation_id desc).
        The default conversation is never listed."""
        ...

    async def list_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        """Canonical messages with position >= start_position, in order; the
        keyset is ``(last_position,)``. Raises ``NotFound``."""
        ...

    async def get_message(self, user_id: str, conversation_id: str, position: int) -> StoredMessage:
        """The canonical message at ``position``. Raises ``NotFound`` (no such
        conversation, or no message there)."""
        ...

    def stream_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, batch_size: int
    ) -> AsyncIterator[tuple[StoredMessage, ...]]:
        """Canonical messages with position >= start_position, in order, in
        batches of at most ``batch_size``, all from the history as it stood
        when the first batch was read: messages appended meanwhile are not
        streamed. Raises ``NotFound`` before the first batch, and
        ``Aborted(CONCURRENT_MODIFICATION)`` instead of a later batch when
        the history was cleared or the conversation deleted since (what
        follows would belong to another history)."""
        ...

    async def list_failed_runs(
        self, user_id: str, conversation_id: str, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        """Newest first. Raises ``NotFound``."""
        ...

    async def snapshot_history(self, user_id: str, conversation_id: str) -> HistorySnapshot:
        """The projection and its revision. Raises ``NotFound``."""
        ...

    async def purge_expired_conversations(self, *, limit: int) -> int:
        """Delete up to ``limit`` expired temporary conversations with
        everything that hangs off them; how many."""
        ...


class MemoryStore(Protocol):
    """Long-term memory entries (append-only with keyed supersede), their
    full-text and vector indexes, tombstones and extraction candidates.

    The memory gate (``domain.governance``) is checked inside the transaction
    of every write (create, update, delete, propose, approve): it raises
    ``FailedPrecondition`` with reason ``MEMORY_CONSENT_WITHDRAWN``,
    ``TEMPORARY_CONVERSATION`` (a conversation the write names is temporary)
    or ``MEMORY_DISABLED``, strongest first; ``get_memory``,
    ``list_memories``, ``list_memory_versions`` and ``list_candidates`` raise
    ``MEMORY_DISABLED``. Recall candidates are not gated (the use case asks
    ``GovernanceStore.memory_gate`` first). A change records its analytics
    events in its transaction (``store.governance.events``).

    Entries are rows that are never overwritten in place: a save inserts; a
    keyed save archives (stamps ``archive_time`` on) the unarchived entries of
    the same (user, scope, conversation, key) in the same transaction, so there
    is at most one unarchived entry per key even under concurrent saves; an
    update records the previous version for ``list_memory_versions``; a delete
    removes the entry, every earlier version, its full-text rows and vectors,
    and leaves a ``MemoryTombstone``.
    """

    async def get_memory(self, user_id: str, memory_id: str) -> Memory:
        """Archived or not. Raises ``NotFound``."""
        ...

    async def list_memories(self, user_id: str, query: MemoryListQuery) -> Page[Memory]:
        """Newest first (keyset: create_time desc, memory_id desc). Without
        ``include_archived`` only unarchived entries (the newest per key)."""
        ...

    async def list_memory_versions(
        self, user_id: str, memory_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Memory]:
        """The entry's earlier versions and the entries of its (scope, key)
        chain, newest first. Raises ``NotFound``."""
        ...

    async def recall(
        self,
        user_id: str,
        query: RecallQuery,
        embedding: Embedding | None,
        *,
        access: Access,
        conversation_ids: Sequence[str],
    ) -> RecallResult:
        """In one read: the gate closed for ``access`` (``conversation_ids``:
        the conversations the query names, for temporary ones), else the hits
        for ``query``, best first (``domain.ranking``: its candidates, their
        order, ``max_results`` and ``min_score``); semantic candidates only
        with ``embedding`` (the query's vector: the exact top
        ``ranking.CANDIDATE_LIMIT`` visible entries by cosine among the
        user's vectors of its model). Raises EMBEDDING_DIMENSION_MISMATCH."""
        ...

    async def list_candidates(
        self, user_id: str, *, include_resolved: bool, limit: int, after: Keyset | None
    ) -> Page[MemoryCandidate]:
        """Newest first."""
        ...


class UserDataStore(Protocol):
    """A user's data as a whole: erasure, export and import (``DeleteUserData``,
    ``ExportUserData``, ``ImportUserData``). The governance gates do not apply:
    these are the user's own rights over the data."""

    async def erase_user(self, command: DeleteUserData) -> Written[ErasureReceipt]:
        """Delete every row of the user in every table that holds user data
        (the user's row last), and the user's full-text index rows, in one
        write transaction; counts per table. Erasing an unknown or erased user
        returns zeros: never ``NotFound``."""
        ...

    async def import_user(self, command: ImportUserData) -> Written[tuple[str, ...]]:
        """Load the data (validated) into the user in one write transaction,
        keeping ids, positions, times and etags; the user is created in the
        caller's tenant. Raises ``FailedPrecondition(reason=
        "IMPORT_TARGET_NOT_EMPTY")`` if the user has any data, ``NotFound``
        if the user belongs to another tenant."""
        ...

    async def export_page(
        self, user_id: str, section: ExportSection, *, limit: int, after: Keyset | None
    ) -> Page[ExportItem]:
        """Up to ``limit`` records of ``section`` after keyset ``after``, in
        the section's deterministic order, read in one read transaction. An
        unknown user has no records."""
        ...


class GovernanceStore(Protocol):
    """Consent, the memory switch, the memory gate for reads, analytics
    events, the audit records of erasures, and the purge of expired
    temporary conversations."""

    async def get_consent(self, user_id: str) -> Consent:
        """Granted (without an update time) for a user who never set it."""
        ...

    async def get_memory_settings(self, user_id: str) -> MemorySettings:
        """Enabled (etag ``""``) for a user who never set them."""
        ...

    async def memory_gate(
        self, user_id: str, conversation_ids: Sequence[str], access: Access
    ) -> Gate | None:
        """The strongest gate closed for ``access`` (read-only transaction)."""
        ...

    def record_events_later(
        self, caller: Caller | None, user_id: str, events: Sequence[NewEvent]
    ) -> None:
        """Record events of ``caller``'s call with the next batch of writes
        (within a second; at shutdown at the latest), not waiting for it: what
        a read records (nothing for a user who does not exist; a failure is
        logged)."""
        ...

    async def flush_events(self) -> None:
        """Return once the events recorded ``later`` before the call are stored."""
        ...

    async def list_events(
        self,
        scope: EventScope,
        types: Collection[EventType],
        *,
        limit: int,
        after: Keyset | None,
    ) -> Page[Event]:
        """Newest first (keyset: create time micros, sequence desc); ``types``
        empty means every type."""
        ...

    async def events_after(
        self, scope: EventScope, types: Collection[EventType], after: Keyset, *, limit: int
    ) -> list[Event]:
        """Up to ``limit`` events after keyset ``after``, oldest first."""
        ...

    async def list_user_erasures(
        self, tenant_id: str, *, limit: int, after: Keyset | None
    ) -> Page[UserErasure]:
        """The audit records of erasures of users of ``tenant_id`` (``""``:
        users without a tenant), newest first (keyset: erase time micros,
        sequence desc), in one read transaction. Raises nothing of its own."""
        ...


class ChangeStore(Protocol):
    """The per-user change feed (``domain.changes``). Every other store's
    writes append their changes in their own transactions."""

    async def changes_after(
        self, user_id: str, after_cursor: int, *, limit: int, caller: Caller | None
    ) -> ChangePage:
        """Up to ``limit`` changes with ``cursor > after_cursor``, oldest first,
        as ``caller`` (``None``: under ``--auth none``) may read them: the
        feed of a user is its tenant's, and a caller of another tenant (the
        new owner of an erased user's id, a watch of the old one) reads it as
        the feed of a user without changes (``latest_cursor`` 0).

        Raises ``OutOfRange(reason="CURSOR_EXPIRED", metadata={"oldest_cursor": ...})``
        when ``0 < after_cursor < oldest_cursor - 1`` (changes after it were
        pruned). A cursor from before an erasure is not expired: the page
        starts at the erasure's change. ``after_cursor`` 0 means from the
        oldest retained. Raises ``OutOfRange(reason="CURSOR_AHEAD",
        metadata={"latest_cursor": ...})`` when ``after_cursor >
        latest_cursor`` (a cursor of another database); one equal to it
        returns no changes.
        """
        ...

    async def latest_cursors(self, user_ids: Collection[str]) -> Mapping[str, int]:
        """The newest cursor of each user (0 for a user with no change)."""
        ...

    async def prune_changes(self, *, older_than_micros: int, limit: int) -> int:
        """Delete up to ``limit`` changes recorded before ``older_than_micros``
        (epoch microseconds), oldest first (each user loses a prefix of its
        changes, never one from the middle); returns how many were deleted.
        Each user's cursor counter survives (even with no change left), so
        cursors keep growing."""
        ...


class DocumentStore(Protocol):
    """Documents (``domain.documents``); written by commands
    (``domain.commands.documents``). Expired documents are absent from every
    read. Each read raises ``FailedPrecondition(MEMORY_DISABLED)`` while the
    user has switched memory off."""

    async def get_document(self, user_id: str, namespace: Namespace, key: str) -> Document | None:
        """The document at ``namespace`` / ``key``, or ``None``."""
        ...

    async def search_documents(self, query: DocumentQuery) -> list[ScoredDocument]:
        """The page of documents ``query`` asks for, best first."""
        ...

    async def list_document_namespaces(self, query: NamespaceQuery) -> list[Namespace]:
        """The page of distinct namespaces ``query`` asks for, sorted."""
        ...

    async def purge_expired_documents(self, *, limit: int) -> int:
        """Delete up to ``limit`` expired documents (each appends its
        DELETE change); how many."""
        ...


class CheckpointStore(Protocol):
    """Graph checkpoints (``domain.checkpoints``); the writes are commands
    (``domain.commands.checkpoints``)."""

    async def get_checkpoint(
        self, key: ThreadKey, checkpoint_ns: str, checkpoint_id: str
    ) -> StoredCheckpoint | None:
        """The checkpoint with its pending writes (``checkpoint_id`` ``""``:
        the newest of the namespace), or ``None``. Raises nothing of its own."""
        ...

    async def list_checkpoints(self, query: CheckpointQuery) -> list[StoredCheckpoint]:
        """Up to ``query.limit`` checkpoints, newest first, each with its
        pending writes. Raises nothing of its own."""
        ...


class EmbeddingStore(Protocol):
    """The backlog of entries waiting for the server's embedder
    (``domain.embedding_backlog``). Raises ``Unavailable`` only."""

    async def lease(self, model: str, holder: str, *, seconds: float) -> bool:
        """Take or renew the lease to embed with ``model`` for ``seconds``:
        whether ``holder`` holds it now. The first lease of a model the
        database has not seen starts its backfill from the first entry; a
        new lease restarts the backfill where the last one stopped (entries
        saved since by a server without this model have no vector of it)."""
        ...

    async def release(self, model: str, holder: str) -> None:
        """Give up ``holder``'s lease of ``model``, if it holds it."""
        ...

    async def pending(self, *, limit: int, user_id: str | None = None) -> list[PendingText]:
        """Up to ``limit`` entries of the backlog (of ``user_id`` only, when
        given), oldest first, with their current text; only entries whose
        memory gates are open (``domain.governance``: consent granted, memory
        on, not in a temporary conversation). The others stay in the
        backlog, held, until their gate opens: no text of a closed gate ever
        reaches the embedder."""
        ...

    async def store_vectors(self, vectors: Sequence[ComputedVector]) -> int:
        """Store each vector whose entry is still at the version it was
        computed from, replacing the entry's vector, and take it off the
        backlog; how many were stored (an entry changed since stays queued,
        one deleted since is gone)."""
        ...

    async def drop(self, entries: Sequence[PendingText]) -> None:
        """Take ``entries`` off the backlog without a vector (the embedder
        refuses their text)."""
        ...

    async def backfill(self, model: str, *, scan: int) -> BackfillStep:
        """Walk up to ``scan`` more entries of ``model``'s backfill, queuing
        those without a vector of ``model`` (none at all, or one the server
        computed with another model)."""
        ...

    async def backlog_size(self) -> int:
        """How many entries are queued (held ones too: ``pending``; cheap,
        the worker asks after every full batch). ``progress`` counts only
        those waiting."""
        ...

    async def progress(self, model: str) -> EmbeddingProgress:
        """Where embedding with ``model`` stands."""
        ...
