"""Plain domain objects of long-term memory (gecx-chat): entries, tombstones,
extraction candidates, recall queries and their results.

Stores return these, never ORM rows or protos. Enum values are the strings a
store writes to its columns (``MemoryScope.CONVERSATION.value ==
"conversation"``); the API layer maps them to and from the proto enums.

An identity-wide entry has ``conversation_id == ""``; a conversation-scoped
entry names its conversation (never ``""``). See ``domain.limits`` for the
sizes every field is held to and ``domain.ranking`` for how recall orders
entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class MemoryScope(StrEnum):
    """Where an entry applies."""

    IDENTITY = "identity"
    """Across every conversation of the user."""
    CONVERSATION = "conversation"
    """Only in one conversation (``conversation_id``)."""


class MemorySource(StrEnum):
    """Who wrote an entry."""

    TOOL_CALL = "tool_call"
    EXTRACTOR = "extractor"
    USER = "user"
    IMPORT = "import"


class CandidateState(StrEnum):
    """Where an extraction candidate stands. Only ``PENDING`` can change."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CANCELLED = "cancelled"


class RecallScope(StrEnum):
    """Which entries a recall searches."""

    ANY = "any"
    """Identity entries plus the current conversation's entries."""
    IDENTITY = "identity"
    """Only identity-wide entries."""
    CONVERSATION = "conversation"
    """Only the current conversation's entries."""


class RecallSignal(StrEnum):
    """Why an entry was recalled (``RecallMemoriesResponse.signals``)."""

    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    CONVERSATION_SCOPE = "conversation_scope"
    PINNED = "pinned"


@dataclass(frozen=True)
class Embedding:
    """A vector of one model. Vectors are only ever compared within one model."""

    model: str
    values: tuple[float, ...]

    @property
    def dimensions(self) -> int:
        return len(self.values)


@dataclass(frozen=True, kw_only=True)
class MemoryDraft:
    """The caller-supplied fields of an entry about to be saved (or proposed).

    The API layer validates it (``domain.limits.draft_problems``, reported
    by ``api.memories.rules.check_memory_draft``); use cases assume a
    validated draft.
    """

    text: str
    key: str = ""
    scope: MemoryScope = MemoryScope.IDENTITY
    conversation_id: str = ""
    source: MemorySource = MemorySource.TOOL_CALL
    metadata: dict[str, str] = field(default_factory=dict)
    pinned: bool = False
    embedding: Embedding | None = None
    # When the fact was stated or observed; None: the save's time.
    event_time: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Memory:
    """A saved long-term memory entry (one row: entries are append-only).

    ``archive_time`` is set when a keyed save of the same (scope, key)
    superseded it, or when it was saved already superseded (a late save of
    an older fact: ``SaveOutcome.HISTORICAL``). ``embedding`` is whatever vector is stored for the entry
    (client-supplied or computed), or ``None``. ``event_time``: when the fact
    was stated or observed (the save's time unless the client gave one;
    ``None`` only for an entry not read from the store). ``valid_until``:
    the event time of the keyed entry that superseded it (``None``: still
    valid); it was valid from its ``event_time`` until then.
    """

    memory_id: str
    user_id: str
    text: str
    create_time: datetime
    update_time: datetime
    key: str = ""
    scope: MemoryScope = MemoryScope.IDENTITY
    conversation_id: str = ""
    source: MemorySource = MemorySource.TOOL_CALL
    metadata: dict[str, str] = field(default_factory=dict)
    pinned: bool = False
    archive_time: datetime | None = None
    etag: str = ""
    embedding: Embedding | None = None
    event_time: datetime | None = None
    valid_until: datetime | None = None

    @property
    def archived(self) -> bool:
        return self.archive_time is not None


@dataclass(frozen=True)
class MemoryTombstone:
    """What remains of a deleted entry, so other devices can sync the deletion."""

    user_id: str
    memory_id: str
    key: str
    delete_time: datetime


@dataclass(frozen=True, kw_only=True)
class MemoryCandidate:
    """A fact an extractor proposed, waiting for (or resolved by) the user.

    ``saved_memory_id`` is set once approved. ``conversation_id``, ``run_id``
    and ``turn`` say where it came from; ``extractor`` names the extractor or
    the built-in pattern that found it.
    """

    candidate_id: str
    user_id: str
    draft: MemoryDraft
    state: CandidateState
    create_time: datetime
    conversation_id: str = ""
    run_id: str = ""
    turn: int = 0
    extractor: str = ""
    saved_memory_id: str = ""


DEFAULT_RECALL_RESULTS = 10
"""``max_results`` when the request leaves it at 0."""

MAX_RECALL_RESULTS = 100
"""The most results one recall returns."""


@dataclass(frozen=True, kw_only=True)
class RecallQuery:
    """A validated recall request.

    ``text`` may be empty only when ``query_embedding`` is set (semantic only).
    ``min_score`` drops hits scoring below it (see ``domain.ranking`` for the
    score's meaning). ``semantic`` ``None``: the server's choice
    (``usecases.recall``: fused when it has an embedder).
    """

    text: str
    conversation_id: str = ""
    scope: RecallScope = RecallScope.ANY
    max_results: int = DEFAULT_RECALL_RESULTS
    min_score: float | None = None
    semantic: bool | None = False
    query_embedding: Embedding | None = None
    # What was true then (validity contains it), archived entries included;
    # and an event-time range [event_after, event_before). None: no bound.
    as_of: datetime | None = None
    event_after: datetime | None = None
    event_before: datetime | None = None

    @property
    def in_time(self) -> bool:
        """Whether the query reads at a time or in an event-time range."""
        return not (self.as_of is None and self.event_after is None and self.event_before is None)


@dataclass(frozen=True)
class RecallHit:
    """One recall result: 1-based ``rank``, ``score`` (higher is better) and
    the signals that matched, in ``RecallSignal`` declaration order."""

    memory: Memory
    score: float
    rank: int
    signals: tuple[RecallSignal, ...]


@dataclass(frozen=True)
class InjectContext:
    """The "inject" context for a send (``BuildContextResponse``).

    ``used_bytes`` counts the UTF-8 bytes of the entry texts used, exactly as
    ``domain.inject`` documents; it is never above the budget asked for.
    ``system_message`` is ``""`` when no entry applies.
    """

    system_message: str
    memory_ids: tuple[str, ...]
    used_bytes: int


@dataclass(frozen=True)
class NearDuplicateProbe:
    """The near-duplicate check of one save (``domain.sameness``): the
    server embedder's vector of each draft's text, and the cosine at or
    above which a live entry with a vector of the same model states the same
    fact."""

    threshold: float
    vectors: tuple[Embedding, ...]


class SaveOutcome(StrEnum):
    """What a save did with its entry (``CreateMemoryResponse.outcome``)."""

    CREATED = "created"
    """Stored; with a key, the current entry of its key."""
    HISTORICAL = "historical"
    """Stored as an earlier version of its key: an entry of the same key with
    a later event time is current and stays so (a late save of an older
    fact). Saved with ``archive_time`` and ``valid_until`` set."""
    DUPLICATE = "duplicate"
    """Nothing stored: the same fact (``domain.sameness``) is a live entry of
    the same scope and conversation (and key, for a keyed save); the memory
    is that entry, unchanged."""


@dataclass(frozen=True)
class SavedMemory:
    """A saved entry, the ids of the entries its key superseded (archived),
    and what the save did (``SaveOutcome``)."""

    memory: Memory
    archived_ids: tuple[str, ...] = ()
    outcome: SaveOutcome = SaveOutcome.CREATED


@dataclass(frozen=True, kw_only=True)
class MemoryChange:
    """An update: each field left ``None`` stays as it is."""

    text: str | None = None
    metadata: dict[str, str] | None = None
    pinned: bool | None = None
    embedding: Embedding | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryListQuery:
    """Filters and page of ``ListMemories``. ``conversation_id`` ``None``:
    any conversation; ``key`` ``None``: any key; ``scope`` ``None``: both;
    ``event_after`` / ``event_before``: entries whose event time is at or
    after / before it (``None``: no bound); ``as_of``: the entries whose
    validity contains it, archived or not (``include_archived`` then has no
    effect)."""

    limit: int
    after: tuple[object, ...] | None = None
    scope: MemoryScope | None = None
    conversation_id: str | None = None
    key: str | None = None
    include_archived: bool = False
    event_after: datetime | None = None
    event_before: datetime | None = None
    as_of: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class CandidateDraft:
    """A candidate about to be proposed: the entry and where it came from."""

    candidate_id: str
    draft: MemoryDraft
    conversation_id: str = ""
    run_id: str = ""
    turn: int = 0
    extractor: str = ""


@dataclass(frozen=True)
class Extracted:
    """What ``ExtractMemories`` did: pending candidates (with approval) or
    saved entries (without)."""

    candidates: tuple[MemoryCandidate, ...] = ()
    memories: tuple[Memory, ...] = ()
