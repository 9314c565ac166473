"""gecx-chat's server memory adapter over Mnemo's long-term memory.

gecx-chat's ``createServerMemoryAdapter({ endpoint })`` becomes, in one line::

    adapter = create_server_memory_adapter(mnemo, user="u1")

``mnemo`` is a ``MnemoClient`` (``ServerMemoryAdapter``) or an
``AsyncMnemoClient`` (``AsyncServerMemoryAdapter``, every method a coroutine).
Methods mirror gecx-chat's adapter: ``save``, ``update``, ``delete``,
``list``, ``recall`` (plus ``get``). Entries are ``MemoryEntry`` values:
append-only, a keyed ``save`` archives the previous live entry of the same
(scope, key) (``archived_at``), ``list`` hides archived entries unless asked.
``save(..., event_time=)`` says when the fact was stated (the turn's time):
a keyed save of an older fact than the live one is stored as an earlier
version (outcome ``"historical"``), and a save of a fact already live (same
normalised text, scope, conversation and key) stores nothing and returns the
existing entry, under its own id (outcome ``"duplicate"``); ``save_result``
returns the entry with the outcome.

Errors: every method raises ``mnemo.client.MnemoError`` subclasses, as gecx's
error codes: ``FailedPreconditionError`` with reason
``MEMORY_CONSENT_WITHDRAWN``, ``MEMORY_DISABLED`` or ``TEMPORARY_CONVERSATION``
when a governance gate refuses a write (consent withdrawn, the user's switch
off: reads then return nothing), ``InvalidArgumentError`` for an entry over its
limits, ``NotFoundError`` for ``update`` of a missing entry. ``delete`` of a
missing entry and ``get`` of one are not errors. gecx-chat's interceptor
swallows adapter errors so that a send is never blocked; the hybrid adapter
(``mnemo.adapters.gecx_hybrid``) never raises from its reads at all.
``save`` and ``delete`` are sent again with the same request id (or, for a
delete, idempotently) after ``UNAVAILABLE`` / ``DEADLINE_EXCEEDED``.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, overload

from mnemo.adapters._steps import (
    DEFAULT_RETRY,
    ClientT,
    RetryPolicy,
    Steps,
    awaitable,
    blocking,
    retrying,
)
from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.client.errors import NotFoundError
from mnemo.v1 import memories_pb2 as mm

__all__ = [
    "AsyncServerMemoryAdapter",
    "MemoryEntry",
    "RecallHit",
    "SaveOutcome",
    "SaveResult",
    "Scope",
    "ServerMemoryAdapter",
    "Source",
    "create_server_memory_adapter",
    "new_memory_id",
]

#: Identity-wide (every conversation of the user) or one conversation's.
Scope = Literal["identity", "conversation"]
#: Who wrote an entry.
Source = Literal["tool_call", "extractor", "user", "import"]
#: What a save did: stored as the current entry (of its key), stored as an
#: earlier version of its key (a later fact of the key is current), or
#: nothing stored (the same fact is already live: the entry is that one).
SaveOutcome = Literal["created", "historical", "duplicate"]

_SCOPES: dict[int, Scope] = {
    mm.MEMORY_SCOPE_IDENTITY: "identity",
    mm.MEMORY_SCOPE_CONVERSATION: "conversation",
}
_SOURCES: dict[int, Source] = {
    mm.MEMORY_SOURCE_TOOL_CALL: "tool_call",
    mm.MEMORY_SOURCE_EXTRACTOR: "extractor",
    mm.MEMORY_SOURCE_USER: "user",
    mm.MEMORY_SOURCE_IMPORT: "import",
}
_OUTCOMES: dict[int, SaveOutcome] = {
    mm.SAVE_OUTCOME_CREATED: "created",
    mm.SAVE_OUTCOME_HISTORICAL: "historical",
    mm.SAVE_OUTCOME_DUPLICATE: "duplicate",
}


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One long-term memory entry, as gecx-chat's adapters return it."""

    id: str
    text: str
    scope: Scope = "identity"
    key: str = ""
    conversation_id: str = ""
    source: Source = "tool_call"
    metadata: dict[str, str] = field(default_factory=dict)
    pinned: bool = False
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    #: Set when a later keyed save superseded the entry.
    archived_at: datetime.datetime | None = None
    #: Mnemo's etag; ``""`` for an entry the server has not confirmed yet.
    etag: str = ""
    #: When the fact was stated or observed (the save's time unless given).
    event_time: datetime.datetime | None = None
    #: For a superseded keyed entry: the event time of the entry that
    #: superseded it (the fact held from ``event_time`` until then).
    valid_until: datetime.datetime | None = None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


@dataclass(frozen=True, slots=True)
class RecallHit:
    """A recalled entry and its score (higher is better)."""

    entry: MemoryEntry
    score: float


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What ``save_result`` returns: the entry and what the save did with it.

    With ``"duplicate"``, ``entry`` is the live entry that already states the
    fact (its own id, not the ``memory_id`` asked for).
    """

    entry: MemoryEntry
    outcome: SaveOutcome


#: Entries, as ``list`` returns them (an alias: the adapters' ``list`` method shadows the type).
Entries = list[MemoryEntry]
#: Recall hits, best first.
Hits = list[RecallHit]


def new_memory_id() -> str:
    """A fresh entry id, chosen by the client (so an offline save can name its entry)."""
    return f"m-{uuid.uuid4().hex}"


def _time(value: Any, present: bool) -> datetime.datetime | None:
    return value.ToDatetime(datetime.UTC) if present else None


def entry_from_proto(memory: mm.Memory) -> MemoryEntry:
    """The ``MemoryEntry`` of a ``mnemo.v1.Memory``."""
    conversation = memory.conversation.rsplit("/", 1)[-1] if memory.conversation else ""
    return MemoryEntry(
        id=memory.name.rsplit("/", 1)[-1],
        text=memory.text,
        scope=_SCOPES.get(memory.scope, "identity"),
        key=memory.key,
        conversation_id=conversation,
        source=_SOURCES.get(memory.source, "tool_call"),
        metadata=dict(memory.metadata),
        pinned=memory.pinned,
        created_at=_time(memory.create_time, memory.HasField("create_time")),
        updated_at=_time(memory.update_time, memory.HasField("update_time")),
        archived_at=_time(memory.archive_time, memory.HasField("archive_time")),
        etag=memory.etag,
        event_time=_time(memory.event_time, memory.HasField("event_time")),
        valid_until=_time(memory.valid_until, memory.HasField("valid_until")),
    )


class ServerSteps:
    """The server adapter's operations as steps (the hybrid adapter's remote too)."""

    def __init__(self, user: str, retry: RetryPolicy) -> None:
        self.user = user
        self.retry = retry

    def save(
        self,
        text: str,
        *,
        key: str = "",
        scope: Scope | None = None,
        conversation_id: str = "",
        source: Source = "tool_call",
        metadata: Mapping[str, str] | None = None,
        pinned: bool = False,
        event_time: datetime.datetime | None = None,
        memory_id: str = "",
        request_id: str = "",
        origin_conversation_id: str = "",
    ) -> Steps[MemoryEntry]:
        """Save a new entry; a ``key`` archives the live entry of the same (scope, key).

        ``scope`` defaults to ``"conversation"`` with a ``conversation_id``,
        else ``"identity"``. ``event_time``: when the fact was stated (the
        turn's time; the server's clock when ``None``, a naive datetime is
        UTC); a keyed save older than the live entry of its key is stored as
        an earlier version. ``memory_id`` names the entry (``new_memory_id()``;
        the server picks one when empty); ``request_id`` (a fresh one when
        empty) makes sending it again harmless. ``origin_conversation_id``:
        the conversation (session) the save is made in, ``conversation_id``
        by default; the server refuses a save from a temporary conversation
        (``TEMPORARY_CONVERSATION``) whatever its scope. A fact already live
        is not saved again: the existing entry is returned (its own id, not
        ``memory_id``); ``save_result`` tells which happened.
        """
        result = yield from self.save_result(
            text,
            key=key,
            scope=scope,
            conversation_id=conversation_id,
            source=source,
            metadata=metadata,
            pinned=pinned,
            event_time=event_time,
            memory_id=memory_id,
            request_id=request_id,
            origin_conversation_id=origin_conversation_id,
        )
        return result.entry

    def save_result(
        self,
        text: str,
        *,
        key: str = "",
        scope: Scope | None = None,
        conversation_id: str = "",
        source: Source = "tool_call",
        metadata: Mapping[str, str] | None = None,
        pinned: bool = False,
        event_time: datetime.datetime | None = None,
        memory_id: str = "",
        request_id: str = "",
        origin_conversation_id: str = "",
    ) -> Steps[SaveResult]:
        """``save``, returning the entry and the outcome: ``"created"``,
        ``"historical"`` (stored as an earlier version of its key) or
        ``"duplicate"`` (nothing stored; the entry is the live one)."""
        rid = request_id or str(uuid.uuid4())
        response = yield from retrying(
            lambda c: c.create_memory(
                self.user,
                text,
                key=key,
                scope=scope,
                conversation=conversation_id or None,
                source=source,
                metadata=metadata,
                pinned=pinned,
                event_time=event_time,
                memory_id=memory_id,
                origin_conversation=origin_conversation_id or conversation_id or None,
                request_id=rid,
            ),
            self.retry,
        )
        return SaveResult(
            entry_from_proto(response.memory), _OUTCOMES.get(response.outcome, "created")
        )

    def get(self, memory_id: str) -> Steps[MemoryEntry | None]:
        """One entry, archived or not; ``None`` if there is none."""
        try:
            memory = yield lambda c: c.get_memory(self.user, memory_id)
        except NotFoundError:
            return None
        return entry_from_proto(memory)

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        pinned: bool | None = None,
        etag: str = "",
        origin_conversation_id: str = "",
    ) -> Steps[MemoryEntry]:
        """Change an entry's text, metadata or pinned flag (what is given); with
        an ``etag``, only if it is still current. ``origin_conversation_id``:
        as for ``save``."""
        memory = yield lambda c: c.update_memory(
            self.user,
            memory_id,
            text=text,
            metadata=metadata,
            pinned=pinned,
            etag=etag,
            origin_conversation=origin_conversation_id or None,
        )
        return entry_from_proto(memory)

    def delete(
        self, memory_id: str, *, etag: str = "", origin_conversation_id: str = ""
    ) -> Steps[None]:
        """Delete an entry for good (its text leaves the server); no error if it
        is gone. ``origin_conversation_id``: as for ``save``."""
        origin = origin_conversation_id or None
        try:
            yield from retrying(
                lambda c: c.delete_memory(
                    self.user, memory_id, etag=etag, origin_conversation=origin
                ),
                self.retry,
            )
        except NotFoundError:
            return

    def list(
        self,
        *,
        scope: Scope | None = None,
        conversation_id: str = "",
        key: str = "",
        include_archived: bool = False,
    ) -> Steps[Entries]:
        """Entries, newest first; the live one per key unless ``include_archived``."""
        memories = yield lambda c: c.list_memories(
            self.user,
            scope=scope,
            conversation=conversation_id or None,
            key=key,
            include_archived=include_archived,
        )
        return [entry_from_proto(m) for m in memories]

    def recall(
        self, query: str, *, conversation_id: str = "", limit: int = 5, semantic: bool | None = None
    ) -> Steps[Hits]:
        """The entries matching ``query``, best first (the conversation's rank above identity)."""
        hits = yield lambda c: c.recall_memories(
            self.user,
            query,
            conversation=conversation_id or None,
            max_results=limit,
            semantic=semantic,
        )
        return [RecallHit(entry_from_proto(h.memory), h.score) for h in hits]


class _Adapter(Generic[ClientT]):
    def __init__(self, client: ClientT, user: str, *, retry: RetryPolicy = DEFAULT_RETRY) -> None:
        self._client = client
        self.steps = ServerSteps(user, retry)

    @property
    def client(self) -> ClientT:
        """The Mnemo client the adapter calls."""
        return self._client

    @property
    def user(self) -> str:
        return self.steps.user

    def __repr__(self) -> str:
        return f"{type(self).__name__}(user={self.user!r})"


class ServerMemoryAdapter(_Adapter[MnemoClient]):
    """gecx-chat's server memory adapter, blocking. See the module for errors."""

    save = blocking(ServerSteps.save)
    save_result = blocking(ServerSteps.save_result)
    get = blocking(ServerSteps.get)
    update = blocking(ServerSteps.update)
    delete = blocking(ServerSteps.delete)
    list = blocking(ServerSteps.list)
    recall = blocking(ServerSteps.recall)


class AsyncServerMemoryAdapter(_Adapter[AsyncMnemoClient]):
    """gecx-chat's server memory adapter, asyncio: ``ServerMemoryAdapter``'s methods, awaited."""

    save = awaitable(ServerSteps.save)
    save_result = awaitable(ServerSteps.save_result)
    get = awaitable(ServerSteps.get)
    update = awaitable(ServerSteps.update)
    delete = awaitable(ServerSteps.delete)
    list = awaitable(ServerSteps.list)
    recall = awaitable(ServerSteps.recall)


@overload
def create_server_memory_adapter(
    client: MnemoClient, *, user: str, retry: RetryPolicy = ...
) -> ServerMemoryAdapter: ...


@overload
def create_server_memory_adapter(
    client: AsyncMnemoClient, *, user: str, retry: RetryPolicy = ...
) -> AsyncServerMemoryAdapter: ...


def create_server_memory_adapter(
    client: MnemoClient | AsyncMnemoClient, *, user: str, retry: RetryPolicy = DEFAULT_RETRY
) -> ServerMemoryAdapter | AsyncServerMemoryAdapter:
    """gecx-chat's ``createServerMemoryAdapter``, backed by Mnemo for ``user``."""
    if isinstance(client, AsyncMnemoClient):
        return AsyncServerMemoryAdapter(client, user, retry=retry)
    return ServerMemoryAdapter(client, user, retry=retry)
