"""The narrow storage interfaces the use cases depend on.

Every method is a coroutine and runs in its own transaction. Methods return
domain objects and raise ``mnemo_server.domain.errors`` exceptions only; driver
errors never escape (a serialization failure that survives the bounded
retries becomes ``Aborted(reason="CONCURRENT_MODIFICATION")``, an unreachable
database ``Unavailable``).

Writes that take an ``Idempotency`` record their result in the same
transaction: a repeat with the same key and fingerprint returns the recorded
result and writes nothing; the same key with another fingerprint raises
``FailedPrecondition(reason="REQUEST_ID_REUSED")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    Exchange,
    FailedRun,
    HistorySnapshot,
    Idempotency,
    JsonObject,
    Keyset,
    MemoryState,
    NewMessage,
    Page,
    RememberResult,
    RunError,
    StoredMessage,
)


class WorkingMemoryStore(Protocol):
    """Working memory per (user, conversation); the default conversation too."""

    async def get_state(self, key: ConversationKey) -> MemoryState:
        """The state, or an empty ``MemoryState()`` if never written. Never raises NotFound."""
        ...

    async def save_state(
        self,
        key: ConversationKey,
        summary: str,
        recent: Sequence[Exchange],
        *,
        expected_etag: str | None,
    ) -> MemoryState:
        """Replace the whole state; creates the user and conversation as needed.

        Raises ``Aborted(reason="ETAG_MISMATCH")`` if ``expected_etag`` is set and
        not current (an unwritten state's etag is ``""``).
        """
        ...

    async def remember(
        self,
        key: ConversationKey,
        exchange: Exchange,
        *,
        keep_recent: int,
        summary: str | None,
        expected_etag: str | None,
        idempotency: Idempotency | None,
    ) -> RememberResult:
        """Atomically append ``exchange``, keep the newest ``keep_recent`` and
        return the evicted ones (``domain.working_memory.window``); replace the
        summary when given. Raises ETAG_MISMATCH / REQUEST_ID_REUSED."""
        ...

    async def clear_state(self, key: ConversationKey, *, expected_etag: str | None) -> MemoryState:
        """Empty the state (new etag). Raises ETAG_MISMATCH."""
        ...


class ConversationStore(Protocol):
    """Conversations and their canonical history, failed runs and compaction."""

    async def create_conversation(
        self,
        user_id: str,
        conversation_id: str,
        *,
        metadata: JsonObject,
        temporary: bool,
        idempotency: Idempotency | None,
    ) -> Conversation:
        """Raises ``AlreadyExists`` if the id is taken (unless an idempotent retry)."""
        ...

    async def get_conversation(self, user_id: str, conversation_id: str) -> Conversation:
        """Raises ``NotFound``."""
        ...

    async def list_conversations(
        self, user_id: str, *, limit: int, after: Keyset | None
    ) -> Page[Conversation]:
        """Most recently updated first (keyset: update_time desc, conversation_id desc).
        The default conversation is never listed."""
        ...

    async def update_conversation_metadata(
        self, user_id: str, conversation_id: str, metadata: JsonObject, *, expected_etag: str | None
    ) -> Conversation:
        """Raises ``NotFound``, ETAG_MISMATCH."""
        ...

    async def delete_conversation(
        self, user_id: str, conversation_id: str, *, expected_etag: str | None
    ) -> None:
        """Deletes it with messages, failed runs, checkpoints and working memory.
        Raises ``NotFound``, ETAG_MISMATCH."""
        ...

    async def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        *,
        run_id: str,
        turn: int,
        expected_position: int | None,
        create_metadata: JsonObject,
        idempotency: Idempotency | None,
    ) -> AppendResult:
        """Append at dense positions, creating the conversation if needed.
        Raises ``Aborted(reason="POSITION_MISMATCH")`` (metadata
        ``expected_position``/``next_position``), REQUEST_ID_REUSED."""
        ...

    async def list_messages(
        self, user_id: str, conversation_id: str, *, start_position: int, limit: int
    ) -> Page[StoredMessage]:
        """Canonical messages with position >= start_position, in order; the
        keyset is ``(last_position,)``. Raises ``NotFound``."""
        ...

    async def clear_messages(self, user_id: str, conversation_id: str) -> Conversation:
        """Delete messages and checkpoints; positions restart at 0; the
        compaction revision changes. Raises ``NotFound``."""
        ...

    async def record_failed_run(
        self,
        user_id: str,
        conversation_id: str,
        *,
        run_id: str,
        error: RunError,
        messages: Sequence[NewMessage],
        idempotency: Idempotency | None,
    ) -> FailedRun:
        """Creates the conversation if needed."""
        ...

    async def list_failed_runs(
        self, user_id: str, conversation_id: str, *, limit: int, after: Keyset | None
    ) -> Page[FailedRun]:
        """Newest first. Raises ``NotFound``."""
        ...

    async def snapshot_history(self, user_id: str, conversation_id: str) -> HistorySnapshot:
        """The projection and its revision. Raises ``NotFound``."""
        ...

    async def replace_history_prefix(
        self,
        user_id: str,
        conversation_id: str,
        *,
        revision: str,
        message_count: int,
        replacement: Sequence[NewMessage],
        run_id: str,
        idempotency: Idempotency | None,
    ) -> HistorySnapshot:
        """Record a checkpoint (``domain.compaction``); returns the new projection.
        Raises ``NotFound``, ``Aborted(reason="REVISION_STALE")``,
        ``InvalidArgument`` if ``message_count`` exceeds the projection."""
        ...
