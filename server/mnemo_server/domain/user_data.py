"""A user's data as a whole: the records of an export (and of an import),
the receipt of an erasure, and the tenant's audit record of an erasure made
by someone other than the user (``UserErasure``, ``audits_erasure``).

An export is a sequence of ``ExportItem``s in a deterministic order: the
sections of ``EXPORT_SECTIONS``, in that order, each in its own order (see
``store.user_data.export``). The existing domain objects serve as records;
the ones below add what a record needs to stand on its own (which
conversation a message belongs to, which entry a version is of, the
compaction checkpoints the API shows only through ``SnapshotHistory``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from mnemo_server.domain.checkpoints import StoredCheckpoint
from mnemo_server.domain.documents import Document
from mnemo_server.domain.governance import Consent, Event, MemorySettings
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import (
    Conversation,
    FailedRun,
    MemoryState,
    NewMessage,
    StoredMessage,
)


@dataclass(frozen=True)
class Erased:
    """What an erasure's transaction did: rows deleted per table (every table
    that holds user data, zeros included; on SQLite also ``memories_fts``,
    the full-text index rows), rows kept on purpose per table (the consent
    decision and memory switch, ``user_settings``, and their ``users`` row;
    empty when the user never set either), and the consent and settings in
    force, which an erasure never changes."""

    deleted_rows: Mapping[str, int]
    retained_rows: Mapping[str, int]
    consent: Consent
    settings: MemorySettings


@dataclass(frozen=True)
class ErasureReceipt:
    """What ``DeleteUserData`` erased and kept (``erased``) and when the
    erasure committed."""

    erased: Erased
    delete_time: datetime


def audits_erasure(caller: Caller | None, user_id: str) -> bool:
    """Whether an erasure of ``user_id`` by ``caller`` that deleted anything
    leaves its tenant an audit record (``UserErasure``): when someone other
    than the user erased (an admin of the user's tenant, or an operator under
    ``--auth none``, ``caller`` ``None``). A user erasing their own data
    leaves none: no trace of the user remains but the change feed's ERASE
    change and the decision an erasure keeps."""
    return caller is None or caller.user_id != user_id


@dataclass(frozen=True, kw_only=True)
class UserErasure:
    """The audit record of an erasure of ``erased_user_id`` (of tenant
    ``tenant_id``, ``""`` none) by ``erased_by`` (the caller's user id, ``""``
    under ``--auth none``; ``by_admin`` its admin role) at ``erase_time``:
    the receipt's ``deleted_rows``. It names the erased user on purpose and
    outlives every erasure of that user. ``sequence``: the store's order (keysets)."""

    tenant_id: str
    erased_user_id: str
    erased_by: str
    by_admin: bool
    erase_time: datetime
    deleted_rows: Mapping[str, int]
    sequence: int = 0


@dataclass(frozen=True)
class ConversationState:
    """The working memory of a conversation (``""``: the default one)."""

    conversation_id: str
    state: MemoryState


@dataclass(frozen=True)
class ConversationMessage:
    """A canonical message of a conversation."""

    conversation_id: str
    message: StoredMessage


@dataclass(frozen=True)
class ConversationFailedRun:
    """A failed run of a conversation."""

    conversation_id: str
    run: FailedRun


@dataclass(frozen=True, kw_only=True)
class CompactionCheckpoint:
    """A compaction checkpoint of a conversation's history (``domain.compaction``).

    ``sequence`` 0 is no checkpoint but a marker: the history was cleared
    (``generation`` > 1) and not compacted since; it covers nothing and has
    no replacement, run or time.
    """

    conversation_id: str
    generation: int
    sequence: int
    covered: int = 0
    replacement: tuple[NewMessage, ...] = ()
    run_id: str = ""
    create_time: datetime | None = None


@dataclass(frozen=True)
class MemoryVersion:
    """Version ``version`` (1, 2, ...) of an entry, which an update replaced.

    ``memory`` is the entry (``memory_id``, key, scope, conversation, source,
    create time) with the version's text, metadata, pinned flag and etag,
    ``update_time`` when the version was written and ``archive_time`` when
    the update replaced it (as ``ListMemoryVersions`` shows it); no vector.
    """

    version: int
    memory: Memory


ExportItem = (
    Consent
    | MemorySettings
    | Conversation
    | ConversationState
    | ConversationMessage
    | CompactionCheckpoint
    | ConversationFailedRun
    | Memory
    | MemoryVersion
    | MemoryTombstone
    | MemoryCandidate
    | Event
    | Document
    | StoredCheckpoint
)
"""One record of an export."""


class ExportSection(StrEnum):
    """The sections of an export, each a kind of record read in its own order."""

    CONSENT = "consent"
    MEMORY_SETTINGS = "memory_settings"
    CONVERSATIONS = "conversations"
    MEMORY_STATES = "memory_states"
    MESSAGES = "messages"
    COMPACTION_CHECKPOINTS = "compaction_checkpoints"
    FAILED_RUNS = "failed_runs"
    MEMORIES = "memories"
    MEMORY_VERSIONS = "memory_versions"
    TOMBSTONES = "tombstones"
    CANDIDATES = "candidates"
    EVENTS = "events"
    DOCUMENTS = "documents"
    GRAPH_CHECKPOINTS = "graph_checkpoints"


EXPORT_SECTIONS: tuple[ExportSection, ...] = tuple(ExportSection)
"""The order of the sections in an export."""


@dataclass(frozen=True, kw_only=True)
class UserData:
    """Everything an import loads into a user, validated at the edge
    (``api.user_data.import_stream``): names of the importing user, conversations
    that exist for every record naming one, dense message positions, unique
    ids, entries for every version, one live entry per key.

    Within each tuple the order is the export's; ``versions`` of one entry
    are in version order.
    """

    consent: Consent | None = None
    memory_settings: MemorySettings | None = None
    conversations: tuple[Conversation, ...] = ()
    states: tuple[ConversationState, ...] = ()
    messages: tuple[ConversationMessage, ...] = ()
    checkpoints: tuple[CompactionCheckpoint, ...] = ()
    failed_runs: tuple[ConversationFailedRun, ...] = ()
    memories: tuple[Memory, ...] = ()
    versions: tuple[MemoryVersion, ...] = ()
    tombstones: tuple[MemoryTombstone, ...] = ()
    candidates: tuple[MemoryCandidate, ...] = ()
    events: tuple[Event, ...] = ()
    documents: tuple[Document, ...] = ()
    graph_checkpoints: tuple[StoredCheckpoint, ...] = ()
    """Graph checkpoints with their pending writes (``domain.checkpoints``)."""
