"""An ``ImportUserData`` stream -> validated ``UserData``, at the edge.

``ImportCollector.add`` checks each streamed request as it arrives (the
parent, and the record with ``api.user_data.records``); ``finish`` checks
what only the whole import shows and returns the ``UserData``. A problem is
reported as an ``INVALID_ARGUMENT`` whose field violations name the record
by its place in the stream: ``records[i].<kind>.<field>`` (``i`` counts the
stream's messages from 0). The first ``MAX_REPORTED_RECORDS`` records with
problems are reported, all at once; the stream is not read further.

What the whole import must satisfy (what the database would otherwise refuse,
or a later read would trip over):

- one conversation per id; every message, failed run, checkpoint and named
  working memory belongs to an imported conversation; one working memory per
  conversation;
- a conversation's messages come in position order from 0 (dense);
- a conversation's checkpoints are sequences 1, 2, ... of one generation,
  each covering at most the conversation's messages (or there is one marker
  of sequence 0);
- one failed run per (conversation, id), entry per id, tombstone per id, and
  no id both an entry and a tombstone; one candidate per id;
- at most one unarchived entry per (scope, conversation, key) with a key;
- vectors of one model have one dimension; every version names an imported
  entry;
- at most one consent and one settings record; one event per id;
- at most ``MAX_IMPORT_RECORDS`` records.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from mnemo.v1 import governance_pb2 as pb
from mnemo_server.api import names
from mnemo_server.api.checkpoints.requests import imported as imported_checkpoint
from mnemo_server.api.documents import records as document_records
from mnemo_server.api.user_data import records
from mnemo_server.api.user_data.convert import record_kind
from mnemo_server.api.validation import Validator, too_large
from mnemo_server.auth.caller import CallScope
from mnemo_server.config import Settings
from mnemo_server.domain.checkpoints import StoredCheckpoint
from mnemo_server.domain.documents import Document
from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.domain.governance import Consent, Event, MemorySettings
from mnemo_server.domain.memory_models import Memory, MemoryCandidate, MemoryTombstone
from mnemo_server.domain.models import Conversation
from mnemo_server.domain.user_data import (
    CompactionCheckpoint,
    ConversationFailedRun,
    ConversationMessage,
    ConversationState,
    MemoryVersion,
    UserData,
)

T = TypeVar("T")

MAX_IMPORT_RECORDS = 1_000_000
"""The most records one import may carry (the server holds them all until
the one transaction that writes them)."""

MAX_REPORTED_RECORDS = 20
"""Records with problems reported by one error, at most."""


Parser = Callable[[Validator, str, Any, str, Settings], object]
"""Checks one record: ``(validator, user_id, record, field prefix, settings)``."""

_PARSERS: dict[str, Parser] = {
    "conversation": lambda v, user, value, at, _: records.conversation(v, user, value, at),
    "memory_state": lambda v, user, value, at, _: records.memory_state(v, user, value, at),
    "message": records.message,
    "compaction_checkpoint": records.checkpoint,
    "failed_run": records.failed_run,
    "memory": lambda v, user, value, at, _: records.memory(v, user, value, at),
    "memory_version": lambda v, user, value, at, _: records.memory_version(v, user, value, at),
    "tombstone": lambda v, user, value, at, _: records.tombstone(v, user, value, at),
    "candidate": lambda v, user, value, at, _: records.candidate(v, user, value, at),
    "consent": lambda v, user, value, at, _: records.consent(v, user, value, at),
    "memory_settings": lambda v, user, value, at, _: records.memory_settings(v, user, value, at),
    "event": lambda v, user, value, at, _: records.event(v, user, value, at),
    "document": lambda v, user, value, at, _: document_records.document(v, user, value, at),
    "checkpoint": lambda v, user, value, at, _: imported_checkpoint(v, user, value, at),
}
"""The record kinds an import reads (``ExportRecord``'s oneof member names)."""


@dataclass
class _Records(Generic[T]):
    """The records of one kind: each with its place in the stream."""

    items: list[tuple[int, T]] = field(default_factory=list)

    def values(self) -> tuple[T, ...]:
        return tuple(item for _, item in self.items)


class ImportCollector:
    """Collects and checks the records of one import (see the module doc)."""

    def __init__(self, settings: Settings, scope: CallScope | None) -> None:
        self._settings = settings
        self._scope = scope
        self._count = 0
        self._user_id: str | None = None
        self._parent = ""
        self._errors: list[InvalidArgument] = []
        self.kinds: Counter[str] = Counter()
        """Records per kind (``ExportRecord`` oneof member names)."""
        self.conversations = _Records[Conversation]()
        self.states = _Records[ConversationState]()
        self.messages = _Records[ConversationMessage]()
        self.checkpoints = _Records[CompactionCheckpoint]()
        self.failed_runs = _Records[ConversationFailedRun]()
        self.memories = _Records[Memory]()
        self.versions = _Records[MemoryVersion]()
        self.tombstones = _Records[MemoryTombstone]()
        self.candidates = _Records[MemoryCandidate]()
        self.consents = _Records[Consent]()
        self.settings = _Records[MemorySettings]()
        self.events = _Records[Event]()
        self.documents = _Records[Document]()
        self.graph_checkpoints = _Records[StoredCheckpoint]()
        self._by_kind: dict[str, _Records[Any]] = {
            "conversation": self.conversations,
            "memory_state": self.states,
            "message": self.messages,
            "compaction_checkpoint": self.checkpoints,
            "failed_run": self.failed_runs,
            "memory": self.memories,
            "memory_version": self.versions,
            "tombstone": self.tombstones,
            "candidate": self.candidates,
            "consent": self.consents,
            "memory_settings": self.settings,
            "event": self.events,
            "document": self.documents,
            "checkpoint": self.graph_checkpoints,
        }

    @property
    def user_id(self) -> str:
        """The importing user; raises ``InvalidArgument`` before any request."""
        return self._require_parent()

    def _require_parent(self) -> str:
        if self._user_id is None:
            raise names.invalid_name("", "parent", names.USER_PATTERN)
        return self._user_id

    def add(self, request: pb.ImportUserDataRequest) -> None:
        """Check one streamed request. Raises ``InvalidArgument`` (the first
        request's parent: ``INVALID_NAME``; too many records or problems),
        ``NotFound`` (a parent the caller may not name)."""
        index = self._count
        self._count += 1
        if self._user_id is None:
            self._user_id = names.parse_user(request.parent, "parent", self._scope)
            self._parent = request.parent
        if self._count > MAX_IMPORT_RECORDS:
            raise too_large("records", MAX_IMPORT_RECORDS, "records", self._count)
        v = Validator()
        prefix = f"records[{index}]"
        if request.parent != self._parent:
            v.invalid(f"{prefix}.parent", f"must be {self._parent}, as in the first request")
        if request.HasField("record"):
            self._record(v, index, request.record, prefix)
        self._collect(v)

    def _collect(self, v: Validator) -> None:
        try:
            v.raise_if_invalid()
        except InvalidArgument as error:
            self._errors.append(error)
            if len(self._errors) >= MAX_REPORTED_RECORDS:
                self._raise()

    def _raise(self) -> None:
        combined = Validator()
        for error in self._errors:
            combined.add(error)
        combined.raise_if_invalid()

    def _record(self, v: Validator, index: int, record: pb.ExportRecord, prefix: str) -> None:
        kind = record_kind(record)
        self.kinds[kind] += 1
        parse = _PARSERS.get(kind)
        if parse is None:
            v.invalid(f"{prefix}.record", f"holds no record this server imports ({kind or 'none'})")
            return
        item = parse(v, self.user_id, getattr(record, kind), f"{prefix}.{kind}", self._settings)
        self._by_kind[kind].items.append((index, item))

    # -------------------------------------------------------------- whole

    def finish(self) -> UserData:
        """The validated data. Raises ``InvalidArgument`` (every problem of
        the records and of the whole, see the module doc; also for a stream
        without any request)."""
        self._require_parent()
        whole = Validator()
        self._check_conversations(whole)
        self._check_memories(whole)
        _unique(whole, self.consents.items, lambda _: "consent", "consent", "is the second one")
        _unique(
            whole, self.settings.items, lambda _: "settings", "memory_settings", "is the second one"
        )
        _unique(whole, self.events.items, lambda e: e.event_id, "event.name")
        _unique(whole, self.documents.items, lambda d: d.name, "document.name")
        _unique(
            whole,
            self.graph_checkpoints.items,
            lambda c: (c.thread_id, c.checkpoint_ns, c.checkpoint_id),
            "checkpoint.checkpoint_id",
        )
        self._collect(whole)
        if self._errors:
            self._raise()
        return UserData(
            consent=next(iter(self.consents.values()), None),
            memory_settings=next(iter(self.settings.values()), None),
            conversations=self.conversations.values(),
            states=self.states.values(),
            messages=self.messages.values(),
            checkpoints=self.checkpoints.values(),
            failed_runs=self.failed_runs.values(),
            memories=self.memories.values(),
            versions=_numbered(self.versions.values()),
            tombstones=self.tombstones.values(),
            candidates=self.candidates.values(),
            events=self.events.values(),
            documents=self.documents.values(),
            graph_checkpoints=self.graph_checkpoints.values(),
        )

    def _check_conversations(self, v: Validator) -> None:
        known = _unique(
            v, self.conversations.items, lambda c: c.conversation_id, "conversation.name"
        )

        def belongs(
            items: list[tuple[int, T]], conversation: Callable[[T], str], path: str
        ) -> None:
            for index, item in items:
                conversation_id = conversation(item)
                if conversation_id and conversation_id not in known:
                    v.invalid(
                        f"records[{index}].{path}",
                        f"names conversation {conversation_id!r}, which the import does not hold",
                    )

        belongs(self.states.items, lambda s: s.conversation_id, "memory_state.name")
        belongs(self.messages.items, lambda m: m.conversation_id, "message.name")
        belongs(
            self.checkpoints.items,
            lambda c: c.conversation_id,
            "compaction_checkpoint.conversation",
        )
        belongs(self.failed_runs.items, lambda f: f.conversation_id, "failed_run.name")
        _unique(v, self.states.items, lambda s: s.conversation_id, "memory_state.name")
        _unique(
            v,
            self.failed_runs.items,
            lambda f: (f.conversation_id, f.run.failed_run_id),
            "failed_run.name",
        )
        counts = self._check_positions(v)
        self._check_checkpoints(v, counts)

    def _check_positions(self, v: Validator) -> Counter[str]:
        """Dense positions from 0 per conversation; the message counts."""
        counts: Counter[str] = Counter()
        for index, item in self.messages.items:
            expected = counts[item.conversation_id]
            if item.message.position != expected:
                v.invalid(
                    f"records[{index}].message.position",
                    f"must be {expected}: a conversation's messages come in position order from 0",
                )
            counts[item.conversation_id] += 1
        return counts

    def _check_checkpoints(self, v: Validator, counts: Counter[str]) -> None:
        latest: dict[str, tuple[int, int]] = {}  # (generation, sequence) per conversation
        for index, item in self.checkpoints.items:
            field = f"records[{index}].compaction_checkpoint"
            previous = latest.get(item.conversation_id)
            if previous is not None and 0 in (previous[1], item.sequence):
                v.invalid(field, "the marker of a cleared history (sequence 0) is its only record")
            elif item.sequence > 0:
                expected = 1 if previous is None else previous[1] + 1
                if item.sequence != expected:
                    v.invalid(f"{field}.revision", f"must be of checkpoint {expected}")
                elif previous is not None and item.generation != previous[0]:
                    v.invalid(f"{field}.revision", "must be of the earlier checkpoints' generation")
            if item.covered > counts[item.conversation_id]:
                v.invalid(
                    f"{field}.covered",
                    f"must be at most the conversation's {counts[item.conversation_id]} messages",
                )
            latest[item.conversation_id] = (item.generation, item.sequence)

    def _check_memories(self, v: Validator) -> None:
        entries = _unique(v, self.memories.items, lambda m: m.memory_id, "memory.name")
        _unique(v, self.tombstones.items, lambda t: t.memory_id, "tombstone.name")
        for index, tombstone in self.tombstones.items:
            if tombstone.memory_id in entries:
                v.invalid(f"records[{index}].tombstone.name", "names an imported entry too")
        for index, version in self.versions.items:
            if version.memory.memory_id not in entries:
                v.invalid(
                    f"records[{index}].memory_version.name",
                    "names an entry the import does not hold",
                )
        _unique(
            v,
            [(i, m) for i, m in self.memories.items if m.key and m.archive_time is None],
            lambda m: (m.scope, m.conversation_id, m.key),
            "memory.key",
            "another unarchived entry has the same scope, conversation and key",
        )
        dimensions: dict[str, int] = {}
        for index, memory in self.memories.items:
            if memory.embedding is None:
                continue
            expected = dimensions.setdefault(memory.embedding.model, memory.embedding.dimensions)
            if memory.embedding.dimensions != expected:
                v.invalid(
                    f"records[{index}].memory.embedding.values",
                    f"must have {expected} values, as the other vectors of its model",
                )
        _unique(v, self.candidates.items, lambda c: c.candidate_id, "candidate.name")


def _unique(
    v: Validator,
    items: list[tuple[int, T]],
    key: Callable[[T], object],
    path: str,
    problem: str = "is taken by an earlier record",
) -> set[object]:
    """The keys of ``items``; a repeated one is reported at its record."""
    seen: set[object] = set()
    for index, item in items:
        value = key(item)
        if value in seen:
            v.invalid(f"records[{index}].{path}", problem)
        seen.add(value)
    return seen


def _numbered(versions: tuple[MemoryVersion, ...]) -> tuple[MemoryVersion, ...]:
    """Versions numbered 1, 2, ... per entry, in their order."""
    counts: defaultdict[str, int] = defaultdict(int)
    result = []
    for version in versions:
        counts[version.memory.memory_id] += 1
        result.append(replace(version, version=counts[version.memory.memory_id]))
    return tuple(result)
