"""What the MCP tools return: plain JSON objects (pydantic models, so each
tool has an output schema and its result comes back as structured content
too), built from the client's messages.

Ids are the last segment of a resource name (``m-3f2a`` for
``users/u1/memories/m-3f2a``): what a model passes back to ``memory_update``
and ``memory_delete``. Times are RFC 3339 strings in UTC, ``""`` when unset.
"""

from __future__ import annotations

from typing import Literal

from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import BaseModel, Field

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm

_SCOPES: dict[int, Literal["identity", "conversation"]] = {
    mm.MEMORY_SCOPE_IDENTITY: "identity",
    mm.MEMORY_SCOPE_CONVERSATION: "conversation",
}
SaveOutcome = Literal["created", "historical", "duplicate"]
_OUTCOMES: dict[int, SaveOutcome] = {
    mm.SAVE_OUTCOME_CREATED: "created",
    mm.SAVE_OUTCOME_HISTORICAL: "historical",
    mm.SAVE_OUTCOME_DUPLICATE: "duplicate",
}
_SOURCES: dict[int, str] = {
    mm.MEMORY_SOURCE_TOOL_CALL: "tool_call",
    mm.MEMORY_SOURCE_EXTRACTOR: "extractor",
    mm.MEMORY_SOURCE_USER: "user",
    mm.MEMORY_SOURCE_IMPORT: "import",
}


def last_segment(name: str) -> str:
    """``users/u1/memories/m1`` -> ``m1``; ``""`` stays ``""``."""
    return name.rpartition("/")[2]


def rfc3339(stamp: Timestamp, present: bool) -> str:
    """The time as RFC 3339 (``2026-12-01T18:50:21.123456Z``), ``""`` when unset."""
    return stamp.ToJsonString() if present else ""


class MemoryEntry(BaseModel):
    """One long-term memory entry of the user."""

    id: str = Field(description="The entry's id: pass it to memory_update or memory_delete.")
    text: str = Field(description="The remembered fact.")
    key: str = Field(description="Its key ('' for none): a later save with this key replaces it.")
    scope: Literal["identity", "conversation"] = Field(
        description="identity: applies in every conversation; conversation: only in this one."
    )
    source: str = Field(description="Who wrote it: tool_call, extractor, user or import.")
    pinned: bool = Field(description="Pinned entries win ties in recall and context.")
    update_time: str = Field(description="When it last changed (RFC 3339).")
    etag: str = Field(description="Its version: pass it to update or delete only this version.")

    @classmethod
    def of(cls, memory: mm.Memory) -> MemoryEntry:
        return cls(
            id=last_segment(memory.name),
            text=memory.text,
            key=memory.key,
            scope=_SCOPES.get(memory.scope, "identity"),
            source=_SOURCES.get(memory.source, "tool_call"),
            pinned=memory.pinned,
            update_time=rfc3339(memory.update_time, memory.HasField("update_time")),
            etag=memory.etag,
        )


class SavedMemory(BaseModel):
    """What memory_save stored."""

    memory: MemoryEntry
    replaced: list[str] = Field(
        description="Ids of the entries with the same key that this save archived."
    )
    outcome: SaveOutcome = Field(
        description="created: saved as a new entry; duplicate: nothing saved, the user's "
        "memory already holds this fact (memory is that entry, with its own id); "
        "historical: saved as an earlier version of its key (a later fact of the key is current)."
    )

    @classmethod
    def of(cls, response: mm.CreateMemoryResponse) -> SavedMemory:
        return cls(
            memory=MemoryEntry.of(response.memory),
            replaced=[last_segment(name) for name in response.archived],
            outcome=_OUTCOMES.get(response.outcome, "created"),
        )


class RecallHit(BaseModel):
    """One entry matching the query."""

    memory: MemoryEntry
    rank: int = Field(description="1 for the best match.")
    score: float = Field(description="Relevance in (0, 1]; comparable within one answer only.")


class Recalled(BaseModel):
    """What memory_recall found, best first."""

    hits: list[RecallHit]


class MemoryPage(BaseModel):
    """One page of the user's live entries, newest first."""

    memories: list[MemoryEntry]
    next_page_token: str = Field(
        description="Pass it as page_token for the next page; '' on the last page."
    )


class DeletedMemory(BaseModel):
    """What remains of a deleted entry: its id, key and delete time (its text is gone)."""

    id: str
    key: str
    delete_time: str

    @classmethod
    def of(cls, tombstone: mm.MemoryTombstone) -> DeletedMemory:
        return cls(
            id=last_segment(tombstone.name),
            key=tombstone.key,
            delete_time=rfc3339(tombstone.delete_time, tombstone.HasField("delete_time")),
        )


class MemoryContext(BaseModel):
    """The memories to inject before answering, as one system message."""

    system_message: str = Field(description="Ready to use as a system message; '' when none apply.")
    memory_ids: list[str] = Field(description="The entries it holds, in order.")
    used_bytes: int = Field(description="Bytes of entry text used, never above max_bytes.")


class ExchangeEntry(BaseModel):
    """One question and its answer."""

    ask: str
    answer: str
    at: str = Field(description="When it happened (RFC 3339).")

    @classmethod
    def of(cls, exchange: wm.Exchange) -> ExchangeEntry:
        return cls(
            ask=exchange.ask,
            answer=exchange.answer,
            at=rfc3339(exchange.at, exchange.HasField("at")),
        )


class WorkingMemory(BaseModel):
    """The conversation's working memory: a rolling summary and the latest exchanges."""

    summary: str = Field(description="A short brief of what came before the recent exchanges.")
    recent: list[ExchangeEntry] = Field(description="The latest exchanges, oldest first.")
    etag: str = Field(description="Its version; '' when never written.")

    @classmethod
    def of(cls, state: wm.MemoryState) -> WorkingMemory:
        return cls(
            summary=state.summary,
            recent=[ExchangeEntry.of(exchange) for exchange in state.recent],
            etag=state.etag,
        )


class Remembered(BaseModel):
    """The working memory after working_memory_remember."""

    state: WorkingMemory
    evicted: list[ExchangeEntry] = Field(
        description="Exchanges that fell off the recent list, oldest first: fold them into the "
        "summary with a later working_memory_remember(summary=...)."
    )
