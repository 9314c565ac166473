"""Bulk saves (``mnemo.v1.MemoryService.BatchCreateMemories``).

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mnemo.client._calls import UnaryCall
from mnemo.client._memories import memory_message, optional_conversation, rpc
from mnemo.client._names import user_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.v1 import memories_pb2 as mm

#: Entries per ``batch_create_memories`` call at most (the server's limit).
MAX_BATCH_ENTRIES = 1000

#: An entry of a batch: a ``CreateMemoryRequest`` (for its ``memory_id``) or
#: a ``Memory`` message as is, or a mapping with ``text`` and optionally
#: ``memory_id``, ``origin_conversation`` and ``create_memory``'s ``key``,
#: ``scope``, ``conversation``, ``source``, ``metadata``, ``pinned``,
#: ``embedding``, ``event_time`` (a datetime).
MemoryLike = mm.CreateMemoryRequest | mm.Memory | Mapping[str, Any]


def entry_request(user: str, entry: MemoryLike) -> mm.CreateMemoryRequest:
    """One entry of a batch as the ``CreateMemoryRequest`` the batch carries."""
    if isinstance(entry, mm.CreateMemoryRequest):
        return entry
    if isinstance(entry, mm.Memory):
        return mm.CreateMemoryRequest(memory=entry)
    fields = dict(entry)
    memory_id = fields.pop("memory_id", "")
    origin = optional_conversation(user, fields.pop("origin_conversation", None))
    return mm.CreateMemoryRequest(
        memory=memory_message(user, fields.pop("text"), **fields),
        memory_id=memory_id,
        origin_conversation=origin,
    )


def batch_create_memories(
    user: str,
    memories: Iterable[MemoryLike],
    *,
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.BatchCreateMemoriesRequest, mm.BatchCreateMemoriesResponse]:
    """Save 1 to 1,000 entries at once, all or nothing, as one
    ``create_memory`` per entry in order would (a keyed entry supersedes the
    live entry of its key, an earlier entry of the batch included, or is stored
    as an earlier version when the live one's ``event_time`` is later; a
    repeat of a live entry, or of an earlier entry of the batch, stores
    nothing). Returns the response: the saved ``memories`` in order (for a
    duplicate, the entry it repeats), the ``outcomes`` in order, and the names
    of the entries it ``archived``. The request must also fit the server's request size limit
    (4 MiB by default). A fresh ``request_id`` is generated unless given, so
    a retried call saves once; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: no entry or more than 1,000, a malformed id or an
            entry over its limits (``INVALID_NAME``, ``INVALID_FIELD``,
            ``FIELD_TOO_LARGE``, ``EMBEDDING_DIMENSION_MISMATCH``); each field
            violation names the entry, ``requests[i].memory.text``.
        AlreadyExistsError: a ``memory_id`` is taken (also by a deleted
            entry) or given twice.
        FailedPreconditionError: the user's memory gates are closed
            (``MEMORY_CONSENT_WITHDRAWN``, ``MEMORY_DISABLED``,
            ``TEMPORARY_CONVERSATION``).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = mm.BatchCreateMemoriesRequest(
        parent=user_name(user),
        requests=[entry_request(user, m) for m in memories],
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("BatchCreateMemories"), request, lambda response: response, timeout)
