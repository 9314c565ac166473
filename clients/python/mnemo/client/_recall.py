"""Recall calls (``mnemo.v1.MemoryService``): streaming recall and the
"inject" context for a send.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

from typing import Literal

from mnemo.client._calls import StreamCall, UnaryCall
from mnemo.client._memories import (
    EmbeddingLike,
    choice,
    embedding_message,
    optional_conversation,
    rpc,
)
from mnemo.client._names import user_name
from mnemo.v1 import memories_pb2 as mm

#: Which entries a recall searches; ``None``: identity entries plus the conversation's.
RecallScope = Literal["identity", "conversation"]

_RECALL_SCOPES: dict[str, mm.RecallScope] = {
    "identity": mm.RECALL_SCOPE_IDENTITY,
    "conversation": mm.RECALL_SCOPE_CONVERSATION,
}


def _hit(response: mm.RecallMemoriesResponse) -> list[mm.RecallMemoriesResponse]:
    return [response]


def recall_memories(
    user: str,
    query: str = "",
    *,
    conversation: str | None = None,
    scope: RecallScope | None = None,
    max_results: int = 0,
    min_score: float | None = None,
    semantic: bool | None = None,
    query_embedding: EmbeddingLike | None = None,
    timeout: float | None = None,
) -> StreamCall[mm.RecallMemoriesRequest, mm.RecallMemoriesResponse]:
    """Iterate over the entries relevant to ``query``, best first, as the
    server streams them: each hit has ``memory``, ``score`` (its relevance to
    the query, 0 to 1, on one scale across users, stores and queries: 0.5
    separates "about this" from "not about this"; docs/relevance.md),
    ``rank`` (1-based) and ``signals`` (lexical, semantic, conversation scope,
    pinned).

    Only hits at or above the minimum relevance come back, so possibly none:
    ``min_score`` (0 to 1) for this call; ``None`` (the default) is the
    server's (``--min-relevance``; unset, 0.5 for recall with the server's
    default embedder, none for lexical recall and other models' vectors);
    ``min_score=0`` returns every match whatever its relevance.

    With ``conversation``, its conversation-scoped entries are searched too
    and outrank identity entries on an equal match. ``max_results`` 0 is the
    server default (10, at most 100). ``semantic=True`` fuses vector
    similarity with the text match; it needs ``query_embedding`` (an
    ``Embedding`` or ``(model, values)``) or a server with an embedder;
    ``False`` ranks by the text match alone; ``None`` (the default) lets the
    server choose: fused when it has an embedder. ``timeout`` bounds the
    whole stream; errors are raised by the iteration.

    Raises:
        InvalidArgumentError: a malformed id, an empty query without a
            ``query_embedding``, an out-of-range value (``INVALID_NAME``,
            ``INVALID_FIELD``, ``EMBEDDING_DIMENSION_MISMATCH``).
        FailedPreconditionError: ``semantic`` without a ``query_embedding``
            on a server without an embedder (``EMBEDDER_UNAVAILABLE``).
    """
    request = mm.RecallMemoriesRequest(
        parent=user_name(user),
        query=query,
        conversation=optional_conversation(user, conversation),
        scope=choice(_RECALL_SCOPES, scope, "scope") if scope else mm.RECALL_SCOPE_UNSPECIFIED,
        max_results=max_results,
        min_score=min_score,
        semantic=semantic,
        query_embedding=embedding_message(query_embedding),
    )
    return StreamCall(rpc("RecallMemories"), request, _hit, timeout)


def build_context(
    user: str,
    query: str,
    *,
    conversation: str | None = None,
    max_entries: int = 0,
    max_bytes: int = 0,
    min_score: float | None = None,
    semantic: bool | None = None,
    query_embedding: EmbeddingLike | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.BuildContextRequest, mm.BuildContextResponse]:
    """The "inject" context for sending ``query``: the top entries relevant to
    it (``max_entries``, 0: 5, at most 50) whose text fits in ``max_bytes``
    (0: 1536, at most 16384), as one ready-to-use ``system_message``, with
    the ``memories`` used (names, in order) and the ``used_bytes`` of entry
    text, never above the budget. Deterministic.

    Only entries at or above the minimum relevance are injected, as for
    ``recall_memories``: ``min_score`` for this call, ``None`` (the default)
    the server's (0.5 with its default embedder). When nothing is relevant
    (a question no memory is about), ``system_message`` is empty and
    ``memories`` too: send the prompt without a memory message.
    ``min_score=0`` injects the best matches whatever their relevance.
    ``semantic`` as for ``recall_memories`` (``None``: fused when the server
    has an embedder).

    Raises:
        InvalidArgumentError: a malformed id, an empty query without a
            ``query_embedding``, an out-of-range size, a ``min_score`` that
            is not a finite number (``INVALID_NAME``, ``INVALID_FIELD``).
        FailedPreconditionError: ``semantic`` without a ``query_embedding``
            on a server without an embedder (``EMBEDDER_UNAVAILABLE``).
    """
    request = mm.BuildContextRequest(
        parent=user_name(user),
        query=query,
        conversation=optional_conversation(user, conversation),
        max_entries=max_entries,
        max_bytes=max_bytes,
        min_score=min_score,
        semantic=semantic,
        query_embedding=embedding_message(query_embedding),
    )
    return UnaryCall(rpc("BuildContext"), request, lambda response: response, timeout)
