"""Long-term memory calls (``mnemo.v1.MemoryService``): save, read, list,
update, delete and the audit trail of entries.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from google.protobuf import field_mask_pb2

from mnemo.client._calls import Page, PagedCall, Rpc, UnaryCall
from mnemo.client._names import conversation_name, memory_name, user_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.client.errors import FieldViolation, InvalidArgumentError
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1.memories_pb2_grpc import MemoryServiceStub

T = TypeVar("T")

#: Where an entry applies: across the user's conversations, or in one.
Scope = Literal["identity", "conversation"]
#: Who wrote an entry.
Source = Literal["tool_call", "extractor", "user", "import"]
#: A vector of ``text``: an ``Embedding`` message or ``(model, values)``.
EmbeddingLike = mm.Embedding | tuple[str, Sequence[float]]

SCOPES: dict[str, mm.MemoryScope] = {
    "identity": mm.MEMORY_SCOPE_IDENTITY,
    "conversation": mm.MEMORY_SCOPE_CONVERSATION,
}
_SOURCES: dict[str, mm.MemorySource] = {
    "tool_call": mm.MEMORY_SOURCE_TOOL_CALL,
    "extractor": mm.MEMORY_SOURCE_EXTRACTOR,
    "user": mm.MEMORY_SOURCE_USER,
    "import": mm.MEMORY_SOURCE_IMPORT,
}


def choice(mapping: Mapping[str, T], value: str, field: str) -> T:
    """``mapping[value]``; an unknown value is refused before sending."""
    if value not in mapping:
        raise InvalidArgumentError(
            f"{field} must be one of {', '.join(mapping)} (got {value!r})",
            reason="INVALID_FIELD",
            metadata={"field": field},
            field_violations=[FieldViolation(field, f"must be one of {', '.join(mapping)}")],
        )
    return mapping[value]


def rpc(method: str) -> Rpc:
    """The ``MemoryService`` RPC named ``method``."""
    return Rpc(MemoryServiceStub, method)


def embedding_message(value: EmbeddingLike | None) -> mm.Embedding | None:
    """An ``Embedding`` message; ``None`` stays unset."""
    if value is None or isinstance(value, mm.Embedding):
        return value
    model, values = value
    return mm.Embedding(model=model, values=values)


def optional_conversation(user: str, conversation: str | None) -> str:
    """The conversation's name, ``""`` for none."""
    return conversation_name(user, conversation) if conversation else ""


def memory_message(
    user: str,
    text: str,
    *,
    key: str = "",
    scope: Scope | None = None,
    conversation: str | None = None,
    source: Source = "tool_call",
    metadata: Mapping[str, str] | None = None,
    pinned: bool = False,
    embedding: EmbeddingLike | None = None,
    event_time: datetime.datetime | None = None,
) -> mm.Memory:
    """An entry to save or propose; ``scope`` ``None`` is ``"conversation"``
    with a ``conversation``, else ``"identity"``; ``event_time`` ``None``
    stays unset (a naive datetime is read as UTC)."""
    chosen = scope or ("conversation" if conversation else "identity")
    return mm.Memory(
        text=text,
        key=key,
        scope=choice(SCOPES, chosen, "scope"),
        conversation=optional_conversation(user, conversation),
        source=choice(_SOURCES, source, "source"),
        metadata=metadata,
        pinned=pinned,
        embedding=embedding_message(embedding),
        event_time=event_time,
    )


def _memory(response: Any) -> mm.Memory:
    memory: mm.Memory = response.memory
    return memory


def _memories_page(response: mm.ListMemoriesResponse) -> Page[mm.Memory]:
    return Page(list(response.memories), response.next_page_token)


def _versions_page(response: mm.ListMemoryVersionsResponse) -> Page[mm.Memory]:
    return Page(list(response.versions), response.next_page_token)


def _tombstone(response: mm.DeleteMemoryResponse) -> mm.MemoryTombstone:
    return response.tombstone


def create_memory(
    user: str,
    text: str,
    *,
    key: str = "",
    scope: Scope | None = None,
    conversation: str | None = None,
    source: Source = "tool_call",
    metadata: Mapping[str, str] | None = None,
    pinned: bool = False,
    embedding: EmbeddingLike | None = None,
    event_time: datetime.datetime | None = None,
    memory_id: str = "",
    origin_conversation: str | None = None,
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.CreateMemoryRequest, mm.CreateMemoryResponse]:
    """Save a long-term memory entry; returns the response: ``memory``, the
    names of the entries it ``archived`` and the ``outcome``
    (``SAVE_OUTCOME_CREATED``, ``_HISTORICAL`` or ``_DUPLICATE``).

    ``event_time`` is when the fact was stated or observed (a naive datetime
    is read as UTC); the server's clock when ``None``. It must lie between
    1970 and 24 hours ahead of the server's clock. With a ``key``, the entry
    supersedes (archives) the live entry of the same scope and key, unless
    that entry's event time is later: then it is stored as an earlier version
    (``SAVE_OUTCOME_HISTORICAL``). A save of the same fact (normalised text,
    same scope, conversation and key) as a live entry stores nothing and
    returns that entry, under its own name, not ``memory_id``
    (``SAVE_OUTCOME_DUPLICATE``). ``scope`` defaults to ``"conversation"``
    when a ``conversation`` is given, else ``"identity"``. ``embedding`` is a vector
    of ``text`` (an ``Embedding`` or ``(model, values)``); without one a
    server with an embedder computes it. ``memory_id`` names the entry (for an
    offline device); the server picks one when empty. ``origin_conversation``
    (an id or a name) is the conversation the save comes from, when it comes
    from one: the server refuses a save from a temporary conversation
    (``TEMPORARY_CONVERSATION``) whatever its scope. A fresh ``request_id``
    is generated unless given, so a retried call saves once; pass ``""`` to
    send none.

    Raises:
        InvalidArgumentError: a malformed id or an entry over its limits
            (``INVALID_NAME``, ``INVALID_FIELD``, ``FIELD_TOO_LARGE``,
            ``EMBEDDING_DIMENSION_MISMATCH``), an ``event_time`` out of range
            (``INVALID_FIELD`` on ``memory.event_time``).
        AlreadyExistsError: ``memory_id`` is taken (also by a deleted entry).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = mm.CreateMemoryRequest(
        parent=user_name(user),
        memory=memory_message(
            user,
            text,
            key=key,
            scope=scope,
            conversation=conversation,
            source=source,
            metadata=metadata,
            pinned=pinned,
            embedding=embedding,
            event_time=event_time,
        ),
        memory_id=memory_id,
        request_id=request_id_or_new(request_id),
        origin_conversation=optional_conversation(user, origin_conversation),
    )
    return UnaryCall(rpc("CreateMemory"), request, lambda response: response, timeout)


def get_memory(
    user: str, memory: str, *, timeout: float | None = None
) -> UnaryCall[mm.GetMemoryRequest, mm.Memory]:
    """Read one entry, archived or not. ``memory`` is its id or its name.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
        NotFoundError: no such entry (or it was deleted).
    """
    request = mm.GetMemoryRequest(name=memory_name(user, memory))
    return UnaryCall(rpc("GetMemory"), request, _memory, timeout)


def list_memories_page(
    user: str,
    *,
    scope: Scope | None = None,
    conversation: str | None = None,
    key: str = "",
    include_archived: bool = False,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[mm.ListMemoriesRequest, Page[mm.Memory]]:
    """One page of entries, newest first: ``(items, next_page_token)``.

    By default only live entries (the newest per key); ``include_archived``
    adds the superseded ones. ``scope``, ``conversation`` and ``key`` filter.

    Raises:
        InvalidArgumentError: a malformed id, a negative size, a page token of
            another listing or filter (``INVALID_NAME``, ``INVALID_FIELD``,
            ``INVALID_PAGE_TOKEN``).
    """
    request = mm.ListMemoriesRequest(
        parent=user_name(user),
        page_size=page_size,
        page_token=page_token,
        scope=choice(SCOPES, scope, "scope") if scope else mm.MEMORY_SCOPE_UNSPECIFIED,
        conversation=optional_conversation(user, conversation),
        include_archived=include_archived,
        key=key,
    )
    return UnaryCall(rpc("ListMemories"), request, _memories_page, timeout)


def list_memories(
    user: str,
    *,
    scope: Scope | None = None,
    conversation: str | None = None,
    key: str = "",
    include_archived: bool = False,
    page_size: int = 0,
    timeout: float | None = None,
) -> PagedCall[mm.Memory]:
    """Iterate over the user's entries, newest first, page by page (see
    ``list_memories_page`` for the filters).

    Raises:
        InvalidArgumentError: a malformed id or a negative page size.
    """
    return PagedCall(
        lambda token: list_memories_page(
            user,
            scope=scope,
            conversation=conversation,
            key=key,
            include_archived=include_archived,
            page_size=page_size,
            page_token=token,
            timeout=timeout,
        )
    )


def update_memory(
    user: str,
    memory: str,
    *,
    text: str | None = None,
    metadata: Mapping[str, str] | None = None,
    pinned: bool | None = None,
    embedding: EmbeddingLike | None = None,
    etag: str = "",
    origin_conversation: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.UpdateMemoryRequest, mm.Memory]:
    """Change an entry's text, metadata, pinned flag or vector (only what is
    given); the previous version stays in ``list_memory_versions``. With an
    ``etag``, only if it is still current. ``origin_conversation``: as for
    ``create_memory``. Returns the updated entry.

    Raises:
        InvalidArgumentError: a malformed id, nothing to change, a value over
            its limits (``INVALID_NAME``, ``INVALID_FIELD``, ``FIELD_TOO_LARGE``,
            ``EMBEDDING_DIMENSION_MISMATCH``).
        NotFoundError: no such entry.
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    given = {"text": text, "metadata": metadata, "pinned": pinned, "embedding": embedding}
    request = mm.UpdateMemoryRequest(
        memory=mm.Memory(
            name=memory_name(user, memory),
            text=text,
            metadata=metadata,
            pinned=pinned,
            embedding=embedding_message(embedding),
            etag=etag,
        ),
        update_mask=field_mask_pb2.FieldMask(
            paths=[path for path, value in given.items() if value is not None]
        ),
        origin_conversation=optional_conversation(user, origin_conversation),
    )
    return UnaryCall(rpc("UpdateMemory"), request, _memory, timeout)


def delete_memory(
    user: str,
    memory: str,
    *,
    etag: str = "",
    origin_conversation: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.DeleteMemoryRequest, mm.MemoryTombstone]:
    """Delete an entry for privacy: its text and every earlier version leave
    the server. Returns the tombstone (name, key, time) that remains for sync;
    deleting again returns it again. ``origin_conversation``: as for
    ``create_memory``.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
        NotFoundError: no such entry.
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    request = mm.DeleteMemoryRequest(
        name=memory_name(user, memory),
        etag=etag,
        origin_conversation=optional_conversation(user, origin_conversation),
    )
    return UnaryCall(rpc("DeleteMemory"), request, _tombstone, timeout)


def list_memory_versions_page(
    user: str,
    memory: str,
    *,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[mm.ListMemoryVersionsRequest, Page[mm.Memory]]:
    """One page of an entry's audit trail, newest first: its earlier versions
    and the entries of its key it superseded or was superseded by.

    Raises:
        InvalidArgumentError: a malformed id, a negative size, a foreign page
            token (``INVALID_NAME``, ``INVALID_FIELD``, ``INVALID_PAGE_TOKEN``).
        NotFoundError: no such entry.
    """
    request = mm.ListMemoryVersionsRequest(
        name=memory_name(user, memory), page_size=page_size, page_token=page_token
    )
    return UnaryCall(rpc("ListMemoryVersions"), request, _versions_page, timeout)


def list_memory_versions(
    user: str, memory: str, *, page_size: int = 0, timeout: float | None = None
) -> PagedCall[mm.Memory]:
    """Iterate over an entry's audit trail, newest first, page by page.

    Raises:
        InvalidArgumentError: a malformed id or a negative page size.
        NotFoundError: no such entry.
    """
    return PagedCall(
        lambda token: list_memory_versions_page(
            user, memory, page_size=page_size, page_token=token, timeout=timeout
        )
    )
