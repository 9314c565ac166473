"""The writes of conversations and their history (Anvia): ``ConversationService``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from mnemo_server.domain.commands import Command, Idempotent
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    FailedRun,
    HistorySnapshot,
    JsonObject,
    NewMessage,
    RunError,
    StoredMessage,
)

__all__ = [
    "AppendMessages",
    "ClearMessages",
    "CreateConversation",
    "DeleteConversation",
    "PopMessages",
    "PopResult",
    "RecordFailedRun",
    "ReplaceHistoryPrefix",
    "UpdateConversation",
]

R = TypeVar("R")


def _weight(messages: tuple[NewMessage, ...]) -> int:
    return sum(len(m.message_json) + len(m.text) for m in messages)


@dataclass(frozen=True, kw_only=True)
class _ConversationWrite(Command[R]):
    """A write of one named conversation of the user."""

    conversation_id: str

    @property
    def key(self) -> ConversationKey:
        return ConversationKey(self.user_id, self.conversation_id)


@dataclass(frozen=True, kw_only=True)
class CreateConversation(_ConversationWrite[Conversation], Idempotent[Conversation]):
    """Create the conversation (its id chosen by the edge when the client sent
    none). A temporary one expires ``lifetime_micros`` after its creation
    (``--temporary-ttl-seconds``; ``None``: never). Raises ``AlreadyExists``,
    ``REQUEST_ID_REUSED``."""

    metadata: JsonObject
    temporary: bool = False
    lifetime_micros: int | None = None


@dataclass(frozen=True, kw_only=True)
class UpdateConversation(_ConversationWrite[Conversation]):
    """Replace the metadata. Raises ``NotFound``, ``ETAG_MISMATCH``."""

    metadata: JsonObject
    expected_etag: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteConversation(_ConversationWrite[None]):
    """Delete it with its messages, failed runs, checkpoints and working
    memory; the states of its earlier changes go too. Raises ``NotFound``,
    ``ETAG_MISMATCH``."""

    expected_etag: str | None = None


@dataclass(frozen=True, kw_only=True)
class AppendMessages(_ConversationWrite[AppendResult], Idempotent[AppendResult]):
    """Append at dense positions, creating the conversation (with
    ``create_metadata``) if needed. Raises ``POSITION_MISMATCH`` when
    ``expected_position`` is set and not the next position,
    ``REQUEST_ID_REUSED``."""

    messages: tuple[NewMessage, ...]
    run_id: str = ""
    turn: int = 0
    expected_position: int | None = None
    create_metadata: JsonObject

    @property
    def weight(self) -> int:
        return _weight(self.messages)


@dataclass(frozen=True)
class PopResult:
    """What a pop removed (oldest first), and the conversation after it."""

    conversation: Conversation
    messages: tuple[StoredMessage, ...]


@dataclass(frozen=True, kw_only=True)
class PopMessages(_ConversationWrite[PopResult], Idempotent[PopResult]):
    """Remove the last ``count`` canonical messages (fewer when the history is
    shorter); the next position goes back by the number removed, and the
    popped messages' earlier changes lose their state. Raises ``NotFound``,
    ``POSITION_MISMATCH`` when ``expected_next_position`` is set and not the
    next position, ``HISTORY_COMPACTED`` when a compaction checkpoint covers a
    message to remove, ``REQUEST_ID_REUSED``."""

    count: int
    expected_next_position: int | None = None


@dataclass(frozen=True, kw_only=True)
class ClearMessages(_ConversationWrite[Conversation]):
    """Delete the messages and checkpoints; positions restart at 0; the
    compaction revision changes. Raises ``NotFound``."""


@dataclass(frozen=True, kw_only=True)
class RecordFailedRun(_ConversationWrite[FailedRun], Idempotent[FailedRun]):
    """Keep a failed run and its partial messages apart from the history,
    creating the conversation if needed. Raises ``REQUEST_ID_REUSED``."""

    run_id: str
    error: RunError
    messages: tuple[NewMessage, ...] = ()

    @property
    def weight(self) -> int:
        return _weight(self.messages) + len(self.error.message) + len(self.error.details_json)


@dataclass(frozen=True, kw_only=True)
class ReplaceHistoryPrefix(_ConversationWrite[HistorySnapshot], Idempotent[HistorySnapshot]):
    """Replace the first ``message_count`` messages of the compaction view by
    ``replacement`` (the canonical history keeps them). Raises ``NotFound``,
    ``REVISION_STALE``, ``INVALID_FIELD`` (``message_count``),
    ``REQUEST_ID_REUSED``."""

    revision: str
    message_count: int
    replacement: tuple[NewMessage, ...] = ()
    run_id: str = ""

    @property
    def weight(self) -> int:
        return _weight(self.replacement)
