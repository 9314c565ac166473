"""Plain domain objects. Stores return these, never ORM rows or protos.

Identity is always explicit: every object of a user's data is reached through
its ``user_id``. The default conversation of working memory (goliath's "no
conversation id") has ``conversation_id == ""``, which no named conversation
can have (names are validated to be non-empty at the edge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")

DEFAULT_CONVERSATION = ""
"""``conversation_id`` of a user's default conversation (working memory only)."""

JsonObject = dict[str, Any]
"""A decoded JSON object (conversation metadata)."""

Keyset = tuple[Any, ...]
"""The sort-key values of the last row of a page; the next page starts after it."""


@dataclass(frozen=True)
class ConversationKey:
    """Which conversation of which user."""

    user_id: str
    conversation_id: str

    @property
    def is_default(self) -> bool:
        return self.conversation_id == DEFAULT_CONVERSATION


@dataclass(frozen=True)
class Idempotency:
    """A ``request_id`` and the fingerprint of the request that carried it.

    A write with an idempotency key records its result in the same
    transaction; the same key with the same fingerprint returns that result and
    writes nothing; with a different fingerprint it is ``REQUEST_ID_REUSED``.
    ``scope`` names the operation (for example ``"AppendMessages"``).
    """

    request_id: str
    scope: str
    fingerprint: str


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a keyset-paginated listing."""

    items: tuple[T, ...]
    next_after: Keyset | None = None


# --- working memory (goliath) ---------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One ask and its answer."""

    ask: str
    answer: str
    at: datetime


@dataclass(frozen=True)
class MemoryState:
    """The working memory of one conversation. ``etag == ""``: never written."""

    summary: str = ""
    recent: tuple[Exchange, ...] = ()
    etag: str = ""
    update_time: datetime | None = None


@dataclass(frozen=True)
class RememberResult:
    """The state after remembering an exchange, and what fell off ``recent``."""

    state: MemoryState
    evicted: tuple[Exchange, ...]


# --- conversation history (Anvia) -----------------------------------------


@dataclass(frozen=True)
class Conversation:
    """A conversation of a user."""

    user_id: str
    conversation_id: str
    metadata: JsonObject = field(default_factory=dict)
    temporary: bool = False
    create_time: datetime | None = None
    update_time: datetime | None = None
    message_count: int = 0
    etag: str = ""
    expire_time: datetime | None = None


@dataclass(frozen=True)
class NewMessage:
    """A validated SDK-native message about to be stored.

    ``message_json`` is kept verbatim; ``role`` and ``text`` (the plain-text
    projection) are derived from it by ``domain.messages``.
    """

    message_json: str
    role: str
    text: str
    # When it was said (``None``: when it is stored), for history appended
    # after the fact.
    event_time: datetime | None = None


@dataclass(frozen=True)
class StoredMessage:
    """A message of the history. ``compacted`` marks a compaction replacement,
    which has no canonical position (``position`` is then -1)."""

    position: int
    run_id: str
    turn: int
    create_time: datetime
    role: str
    message_json: str
    text: str
    compacted: bool = False
    # When it was said; ``None``: its create time.
    event_time: datetime | None = None


@dataclass(frozen=True)
class AppendResult:
    """What an append stored, and the conversation after it."""

    conversation: Conversation
    messages: tuple[StoredMessage, ...]


@dataclass(frozen=True)
class RunError:
    """Why a run failed."""

    message: str
    code: str = ""
    details_json: str = ""


@dataclass(frozen=True)
class FailedRun:
    """A failed run with its partial messages, kept apart from the history."""

    failed_run_id: str
    run_id: str
    error: RunError
    messages: tuple[StoredMessage, ...]
    create_time: datetime


@dataclass(frozen=True)
class HistorySnapshot:
    """The compaction projection of a history and the revision it was read at."""

    revision: str
    messages: tuple[StoredMessage, ...]
