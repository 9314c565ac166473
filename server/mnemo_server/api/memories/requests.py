"""MemoryService requests -> validated domain values, at the edge.

Every function records its problems on the caller's ``Validator`` (so that a
request's problems are reported all at once) and returns a usable fallback;
the servicer raises before any fallback is used. Sizes are those of
``domain.limits`` (entries) and the proto (recall, context, candidates).

Names: ``users/{user}/memories/{memory}`` and
``users/{user}/memoryCandidates/{candidate}``. A conversation named in a
request (``memory.conversation``, ``conversation``) must be one of the
request's own user, ``users/{user}/conversations/{conversation}``. The call's
scope (``call``, ``auth.caller.CallScope``) authorizes every name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf import field_mask_pb2

from mnemo.v1 import memories_pb2 as pb
from mnemo_server.api import names
from mnemo_server.api.memories.convert import RECALL_SCOPES, SCOPES, SOURCES
from mnemo_server.api.memories.rules import RULES, check_memory_draft, embedding_violations
from mnemo_server.api.validation import Validator, check_fields, holds_datetime
from mnemo_server.auth.caller import CallScope
from mnemo_server.domain import inject
from mnemo_server.domain.errors import FieldViolation, InvalidArgument, MnemoError, Part
from mnemo_server.domain.limits import MAX_EMBEDDING_DIMENSIONS
from mnemo_server.domain.memory_models import (
    DEFAULT_RECALL_RESULTS,
    MAX_RECALL_RESULTS,
    Embedding,
    MemoryChange,
    MemoryDraft,
    MemoryListQuery,
    MemoryScope,
    MemorySource,
    RecallQuery,
    RecallScope,
)
from mnemo_server.domain.models import Keyset

E = TypeVar("E")

UPDATABLE = ("text", "metadata", "pinned", "embedding")
"""``UpdateMemory`` mask paths; an empty mask means ``text``."""

MAX_PROPOSED_CANDIDATES = 100

MAX_BATCH_CREATE = 1000
"""Entries per ``BatchCreateMemories`` at most (the request must also fit
``--max-request-bytes``)."""

MEMORY_PATTERN = "users/{user}/memories/{memory}"
CANDIDATE_PATTERN = "users/{user}/memoryCandidates/{candidate}"
_MEMORY = re.compile(rf"users/({names.ID_PATTERN})/memories/({names.ID_PATTERN})")
_CANDIDATE = re.compile(rf"users/({names.ID_PATTERN})/memoryCandidates/({names.ID_PATTERN})")


# ------------------------------------------------------------------ names


def _ids(
    value: str, field: str, pattern: re.Pattern[str], expected: str, scope: CallScope | None
) -> tuple[str, str]:
    user_id, child_id = names.owned_ids(value, field, pattern, expected, scope)
    return user_id, child_id


def parse_memory(value: str, field: str, scope: CallScope | None) -> tuple[str, str]:
    """``users/{user}/memories/{memory}`` -> ``(user_id, memory_id)``; ``INVALID_NAME``."""
    return _ids(value, field, _MEMORY, MEMORY_PATTERN, scope)


def parse_candidate(value: str, field: str, scope: CallScope | None) -> tuple[str, str]:
    """``users/{user}/memoryCandidates/{candidate}`` -> ``(user_id, candidate_id)``."""
    return _ids(value, field, _CANDIDATE, CANDIDATE_PATTERN, scope)


def memory_of(v: Validator, value: str, field: str, scope: CallScope | None) -> tuple[str, str]:
    return v.attempt(lambda: parse_memory(value, field, scope), ("", ""))


def candidate_of(v: Validator, value: str, field: str, scope: CallScope | None) -> tuple[str, str]:
    return v.attempt(lambda: parse_candidate(value, field, scope), ("", ""))


def conversation_of(
    v: Validator, value: str, field: str, user_id: str, scope: CallScope | None
) -> str | None:
    """The conversation id of a conversation of ``user_id``; ``""`` for an
    empty value, ``None`` after an ``INVALID_NAME`` (also for another user's
    conversation)."""
    if not value:
        return ""
    key = v.attempt(lambda: names.parse_conversation(value, field, scope), None)
    if key is None:
        return None
    if user_id and key.user_id != user_id:
        expected = f"users/{user_id}/conversations/{{conversation}}"
        v.add(names.invalid_name(value, field, expected))
        return None
    return key.conversation_id


def origin_of(v: Validator, value: str, field: str, user_id: str, call: CallScope | None) -> str:
    """The conversation id a write says it comes from (``origin_conversation``,
    a conversation of ``user_id``); ``""`` for none or an invalid name
    (reported on ``v``)."""
    return conversation_of(v, value, field, user_id, call) or ""


# ------------------------------------------------------------------ enums


def _enum(
    v: Validator, value: int, field: str, mapping: Mapping[E, int], unspecified: E | None
) -> E | None:
    """The domain value of a proto enum number; 0 is ``unspecified``."""
    if value == 0:
        return unspecified
    for domain_value, number in mapping.items():
        if number == value:
            return domain_value
    v.invalid(field, f"unknown value {value}")
    return unspecified


def _required_enum(
    v: Validator, value: int, field: str, mapping: Mapping[E, int], unspecified: E
) -> E:
    found = _enum(v, value, field, mapping, unspecified)
    return unspecified if found is None else found


# ------------------------------------------------------------- embeddings


def embedding_of(value: pb.Embedding) -> Embedding:
    return Embedding(value.model, tuple(value.values))


def check_embedding(v: Validator, embedding: Embedding, path: str) -> None:
    """Every problem of a vector outside a memory draft (``query_embedding``)."""
    violations = embedding_violations(embedding, path)
    if not violations:
        return
    too_large = len(embedding.values) > MAX_EMBEDDING_DIMENSIONS and len(violations) == 1
    first = violations[0]
    v.add(
        InvalidArgument(
            f"{first.field} {first.description}",
            reason="FIELD_TOO_LARGE" if too_large else "INVALID_FIELD",
            metadata={"field": first.field}
            | ({"limit": str(MAX_EMBEDDING_DIMENSIONS)} if too_large else {}),
            violations=tuple(violations),
        )
    )


# ------------------------------------------------------- store's findings


@dataclass(frozen=True)
class EntryFields:
    """Where a request holds the inputs of its write, to name the field of an
    error the store raises about one (its ``Entry``): draft ``i`` at
    ``draft(i)``, its client-chosen id at ``memory_id(i)`` (``None``: the
    server chose the ids, and no field is named)."""

    draft: Callable[[int], str] = lambda i: "memory"
    memory_id: Callable[[int], str] | None = None

    def path(self, error: MnemoError) -> str | None:
        entry = error.entry
        if entry is None:
            return None
        if entry.part is Part.QUERY_EMBEDDING:
            return "query_embedding.values"
        if entry.part is Part.EMBEDDING:
            return f"{self.draft(entry.index)}.embedding.values"
        return None if self.memory_id is None else self.memory_id(entry.index)

    def located(self, error: MnemoError) -> MnemoError:
        """``error`` with its field named: metadata and a field violation."""
        entry, field = error.entry, self.path(error)
        if entry is None or field is None:
            return error
        if entry.part is not Part.MEMORY_ID:
            expected, got = error.metadata["expected"], error.metadata["got"]
            return replace(
                error,
                message=f"{field} has {got} values; vectors of this model have {expected}",
                violations=(FieldViolation(field, f"must have {expected} values (got {got})"),),
            )
        name = error.metadata["name"]
        if entry.same_as is not None and self.memory_id is not None:
            first = self.memory_id(entry.same_as)
            return replace(
                error,
                message=f"{field} names {name}, as {first} does; choose another memory id",
                metadata={"name": name, "field": field},
                violations=(FieldViolation(field, f"the id of {first} too"),),
            )
        what = "already exists (or existed and was deleted)"
        return replace(
            error,
            metadata={"name": name, "field": field},
            violations=(FieldViolation(field, f"{name} {what}"),),
        )

    @contextmanager
    def naming(self) -> Iterator[None]:
        """Raise the store's errors of the block with their fields named."""
        try:
            yield
        except MnemoError as error:
            if error.entry is None:
                raise
            raise self.located(error) from None


CREATE_FIELDS = EntryFields(memory_id=lambda i: "memory_id")
BATCH_FIELDS = EntryFields(
    draft=lambda i: f"requests[{i}].memory", memory_id=lambda i: f"requests[{i}].memory_id"
)
EXTRACT_FIELDS = EntryFields(draft=lambda i: f"memories[{i}]")
APPROVE_FIELDS = EntryFields(draft=lambda i: "candidate.memory")
UPDATE_FIELDS = EntryFields()
RECALL_FIELDS = UPDATE_FIELDS
"""Drafts of ``CreateMemory``, ``BatchCreateMemories``, ``ExtractMemories``
(server ids; its entries are the response's ``memories[i]``),
``ApproveMemoryCandidate`` (a server id), ``UpdateMemory``; recall's query
vector (``RecallMemories``, ``BuildContext``) is ``query_embedding``
whatever the layout."""


# ------------------------------------------------------------------ drafts


def draft_of(
    v: Validator,
    memory: pb.Memory,
    prefix: str,
    user_id: str,
    call: CallScope | None,
    *,
    source: MemorySource | None = None,
) -> MemoryDraft:
    """The entry a request saves or proposes (output-only fields ignored).

    Unspecified scope is identity, unspecified source tool call; ``source``
    overrides the request's. Checked with ``api.memories.rules.check_memory_draft``.
    """
    scope = _required_enum(v, memory.scope, f"{prefix}.scope", SCOPES, MemoryScope.IDENTITY)
    chosen = _required_enum(v, memory.source, f"{prefix}.source", SOURCES, MemorySource.TOOL_CALL)
    conversation_id = conversation_of(
        v, memory.conversation, f"{prefix}.conversation", user_id, call
    )
    if conversation_id is None:
        # Already reported as INVALID_NAME: stand in a value that raises
        # nothing more about the scope and conversation pairing.
        conversation_id = "-" if scope is MemoryScope.CONVERSATION else ""
    draft = MemoryDraft(
        text=memory.text,
        key=memory.key,
        scope=scope,
        conversation_id=conversation_id,
        source=source or chosen,
        metadata=dict(memory.metadata),
        pinned=memory.pinned,
        embedding=embedding_of(memory.embedding) if memory.HasField("embedding") else None,
        event_time=_optional_time(v, memory, "event_time", f"{prefix}.event_time"),
    )
    v.attempt(lambda: check_memory_draft(draft, prefix=prefix), None)
    return draft


def batch_drafts_of(
    v: Validator, request: pb.BatchCreateMemoriesRequest, user_id: str, call: CallScope | None
) -> list[tuple[str, MemoryDraft]]:
    """The ``(memory_id, draft)`` of each entry of a batch, in order (``""``:
    the server picks the id), each checked as ``CreateMemory`` checks its
    request, under ``requests[i]`` (the ids by ``RULES``); an entry's
    ``parent`` is empty or the batch's, its ``request_id`` empty."""
    count = len(request.requests)
    if count == 0:
        v.invalid("requests", "needs at least 1 request")
    v.max_items(count, "requests", MAX_BATCH_CREATE)
    drafts: list[tuple[str, MemoryDraft]] = []
    for index, entry in enumerate(request.requests[:MAX_BATCH_CREATE]):
        field = f"requests[{index}]"
        if entry.parent and entry.parent != request.parent:
            v.invalid(f"{field}.parent", "must be empty or equal to the batch's parent")
        if entry.request_id:
            v.invalid(
                f"{field}.request_id",
                "must be empty: the batch's request_id makes the whole batch idempotent",
            )
        draft = draft_of(v, entry.memory, f"{field}.memory", user_id, call)
        drafts.append((entry.memory_id, draft))
    return drafts


def batch_origins_of(
    v: Validator, request: pb.BatchCreateMemoriesRequest, user_id: str, call: CallScope | None
) -> tuple[str, ...]:
    """The ``origin_conversation`` of each entry of a batch (``origin_of``)."""
    return tuple(
        origin_of(v, entry.origin_conversation, f"requests[{i}].origin_conversation", user_id, call)
        for i, entry in enumerate(request.requests[:MAX_BATCH_CREATE])
    )


def batch_near_duplicates(request: pb.BatchCreateMemoriesRequest) -> bool | None:
    """A batch's choice of the near-duplicate check: on when an entry asks
    for it, off when entries only refuse it, else the server's (``None``)."""
    said = [r.near_duplicates for r in request.requests if r.HasField("near_duplicates")]
    return any(said) if said else None


def change_of(v: Validator, memory: pb.Memory, mask: field_mask_pb2.FieldMask) -> MemoryChange:
    """The change an ``UpdateMemory`` asks for; fields outside the mask stay."""
    paths = list(mask.paths) or ["text"]
    for path in paths:
        if path not in UPDATABLE:
            v.invalid(
                "update_mask", f"only {', '.join(UPDATABLE)} can be updated (got {path[:64]!r})"
            )
    embedding = None
    if "embedding" in paths:
        # An absent vector is an empty one: reported as missing model and values.
        embedding = embedding_of(memory.embedding)
    change = MemoryChange(
        text=memory.text if "text" in paths else None,
        metadata=dict(memory.metadata) if "metadata" in paths else None,
        pinned=memory.pinned if "pinned" in paths else None,
        embedding=embedding,
    )
    # The fields not updated stand in with valid values, so only the updated
    # ones can be reported.
    probe = MemoryDraft(
        text=memory.text if change.text is not None else "-",
        metadata=change.metadata or {},
        embedding=embedding,
    )
    v.attempt(lambda: check_memory_draft(probe, prefix="memory"), None)
    return change


# ---------------------------------------------------------------- listings


def list_query_of(
    v: Validator,
    request: pb.ListMemoriesRequest,
    user_id: str,
    call: CallScope | None,
    *,
    limit: int,
    after: Keyset | None,
) -> MemoryListQuery:
    """The filters of ``ListMemories`` (the page is the servicer's)."""
    scope = _enum(v, request.scope, "scope", SCOPES, None)
    conversation_id = conversation_of(v, request.conversation, "conversation", user_id, call)
    if request.conversation and scope is MemoryScope.IDENTITY:
        v.invalid("conversation", "must be empty when scope is identity")
    as_of, event_after, event_before = _time_view(v, request)
    check_fields(v, request, RULES)
    return MemoryListQuery(
        limit=limit,
        after=after,
        scope=scope,
        conversation_id=conversation_id or None,
        key=request.key or None,
        include_archived=request.include_archived,
        event_after=event_after,
        event_before=event_before,
        as_of=as_of,
    )


TimeView = tuple[datetime | None, datetime | None, datetime | None]
"""``(as_of, event_after, event_before)`` of a reading request."""


def _time_view(
    v: Validator,
    request: pb.ListMemoriesRequest | pb.RecallMemoriesRequest | pb.BuildContextRequest,
) -> TimeView:
    """The time a read looks at and its event-time range (an empty range refused)."""
    as_of = _optional_time(v, request, "as_of", "as_of")
    event_after = _optional_time(v, request, "event_time_after", "event_time_after")
    event_before = _optional_time(v, request, "event_time_before", "event_time_before")
    if event_after is not None and event_before is not None and event_before <= event_after:
        v.invalid("event_time_before", "must be after event_time_after")
    return as_of, event_after, event_before


def _optional_time(v: Validator, holder: Any, name: str, field: str) -> datetime | None:
    """The timestamp field ``name`` of ``holder`` (at request path ``field``);
    ``None`` when unset, or not a time (reported)."""
    if not holder.HasField(name):
        return None
    value = getattr(holder, name)
    v.timestamp(value, field)
    return value.ToDatetime(UTC) if holds_datetime(value) else None


def memory_filters(request: pb.ListMemoriesRequest) -> tuple[str, ...]:
    """What a ``ListMemories`` page token is bound to: parent and every filter."""
    return (
        request.parent,
        str(request.scope),
        request.conversation,
        request.key,
        str(request.include_archived),
        _stamp_text(request, "event_time_after"),
        _stamp_text(request, "event_time_before"),
        _stamp_text(request, "as_of"),
    )


def _stamp_text(holder: Any, name: str) -> str:
    if not holder.HasField(name):
        return ""
    value = getattr(holder, name)
    return f"{value.seconds}.{value.nanos}"


# ------------------------------------------------------------------ recall


def _bounded(v: Validator, value: int, field: str, default: int, maximum: int) -> int:
    """0 -> ``default``; 1..``maximum`` as given; otherwise ``INVALID_FIELD``."""
    if value == 0:
        return default
    if not 1 <= value <= maximum:
        v.invalid(field, f"must be 1 to {maximum} (0 means the default {default}; got {value})")
        return default
    return value


def _recall_basics(
    v: Validator,
    request: pb.RecallMemoriesRequest | pb.BuildContextRequest,
    user_id: str,
    call: CallScope | None,
    scope: RecallScope = RecallScope.ANY,
) -> RecallQuery:
    check_fields(v, request, RULES)
    embedding = None
    if request.HasField("query_embedding"):
        embedding = embedding_of(request.query_embedding)
        check_embedding(v, embedding, "query_embedding")
    elif not request.query.strip():
        v.invalid("query", "is required unless query_embedding is set")
    conversation_id = conversation_of(v, request.conversation, "conversation", user_id, call) or ""
    if scope is RecallScope.CONVERSATION and not request.conversation:
        v.invalid("conversation", "is required with conversation scope")
    as_of, event_after, event_before = _time_view(v, request)
    return RecallQuery(
        text=request.query,
        conversation_id=conversation_id,
        scope=scope,
        semantic=request.semantic if request.HasField("semantic") else None,
        query_embedding=embedding,
        as_of=as_of,
        event_after=event_after,
        event_before=event_before,
    )


def recall_query_of(
    v: Validator, request: pb.RecallMemoriesRequest, user_id: str, call: CallScope | None
) -> RecallQuery:
    """A ``RecallMemories`` request as a query."""
    scope = _required_enum(v, request.scope, "scope", RECALL_SCOPES, RecallScope.ANY)
    query = _recall_basics(v, request, user_id, call, scope)
    max_results = _bounded(
        v, request.max_results, "max_results", DEFAULT_RECALL_RESULTS, MAX_RECALL_RESULTS
    )
    return replace(query, max_results=max_results, min_score=_min_score(v, request))


def _min_score(
    v: Validator, request: pb.RecallMemoriesRequest | pb.BuildContextRequest
) -> float | None:
    """The request's minimum relevance (``None``: unset, the server's)."""
    if not request.HasField("min_score"):
        return None
    if not math.isfinite(request.min_score):
        v.invalid("min_score", "must be a finite number")
        return None
    return request.min_score


def context_query_of(
    v: Validator, request: pb.BuildContextRequest, user_id: str, call: CallScope | None
) -> tuple[RecallQuery, int, int]:
    """A ``BuildContext`` request as ``(query, max_entries, max_bytes)``."""
    query = _recall_basics(v, request, user_id, call)
    max_entries = _bounded(
        v, request.max_entries, "max_entries", inject.DEFAULT_MAX_ENTRIES, inject.MAX_MAX_ENTRIES
    )
    max_bytes = _bounded(
        v, request.max_bytes, "max_bytes", inject.DEFAULT_MAX_BYTES, inject.MAX_MAX_BYTES
    )
    return replace(query, min_score=_min_score(v, request)), max_entries, max_bytes


# -------------------------------------------------------------- candidates


def proposed_count(v: Validator, count: int, field: str = "candidates") -> None:
    if count == 0:
        v.invalid(field, "needs at least 1 candidate")
    v.max_items(count, field, MAX_PROPOSED_CANDIDATES)
