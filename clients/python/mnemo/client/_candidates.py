"""Extraction calls (``mnemo.v1.MemoryService``): the server's heuristic
extractor, candidates from the client's own extractor, approve and reject.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mnemo.client._calls import Page, PagedCall, UnaryCall
from mnemo.client._history import MessageLike, history_messages
from mnemo.client._memories import memory_message, optional_conversation, rpc
from mnemo.client._names import memory_candidate_name, user_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.v1 import memories_pb2 as mm

#: A proposed fact: a ``MemoryCandidate`` message, or a mapping with ``text``
#: and optionally ``key``, ``scope``, ``metadata``, ``pinned``, ``embedding``
#: (as for ``create_memory``) and where it came from: ``conversation``,
#: ``run_id``, ``turn``, ``extractor``.
CandidateLike = mm.MemoryCandidate | Mapping[str, Any]

_ORIGIN = ("conversation", "run_id", "turn", "extractor")


def candidate_message(user: str, candidate: CandidateLike) -> mm.MemoryCandidate:
    """A ``MemoryCandidate`` as is; a mapping as described by ``CandidateLike``.

    With ``scope="conversation"`` the entry applies to the conversation the
    candidate came from.
    """
    if isinstance(candidate, mm.MemoryCandidate):
        return candidate
    fields = dict(candidate)
    origin = {name: fields.pop(name) for name in _ORIGIN if name in fields}
    conversation = origin.get("conversation")
    scoped = fields.get("scope") == "conversation"
    return mm.MemoryCandidate(
        memory=memory_message(
            user,
            fields.pop("text"),
            conversation=conversation if scoped else None,
            **{"scope": "identity", "source": "extractor", **fields},
        ),
        conversation=optional_conversation(user, conversation),
        run_id=origin.get("run_id", ""),
        turn=origin.get("turn", 0),
        extractor=origin.get("extractor", ""),
    )


def _candidates(response: Any) -> list[mm.MemoryCandidate]:
    return list(response.candidates)


def _candidates_page(response: mm.ListMemoryCandidatesResponse) -> Page[mm.MemoryCandidate]:
    return Page(list(response.candidates), response.next_page_token)


def _candidate(response: mm.RejectMemoryCandidateResponse) -> mm.MemoryCandidate:
    return response.candidate


def extract_memories(
    user: str,
    messages: Iterable[MessageLike],
    *,
    conversation: str | None = None,
    run_id: str = "",
    turn: int = 0,
    require_approval: bool = False,
    request_id: str | None = None,
    timeout: float | None = None,
    said_at: Sequence[datetime.datetime | None] | None = None,
) -> UnaryCall[mm.ExtractMemoriesRequest, mm.ExtractMemoriesResponse]:
    """Run the server's heuristic extractor (no LLM) over SDK-shaped messages.

    Only user messages are read: names, how to address the user, likes and
    dislikes, diet and allergies, location, "remember that ...". With
    ``require_approval`` what it finds waits as pending ``candidates`` (each
    with this ``conversation``, ``run_id`` and ``turn``); without, it is saved
    at once and returned as ``memories`` (source extractor). A fresh
    ``request_id`` is generated unless given; pass ``""`` to send none.
    ``said_at``: when each message was said; what is found in a message is
    dated by it (``Memory.event_time``).

    Raises:
        InvalidArgumentError: a malformed id or message (``INVALID_NAME``,
            ``INVALID_FIELD``, ``INVALID_MESSAGE``, ``FIELD_TOO_LARGE``).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = mm.ExtractMemoriesRequest(
        parent=user_name(user),
        conversation=optional_conversation(user, conversation),
        messages=history_messages(messages, said_at),
        run_id=run_id,
        turn=turn,
        require_approval=require_approval,
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("ExtractMemories"), request, lambda response: response, timeout)


def propose_memory_candidates(
    user: str,
    candidates: Iterable[CandidateLike],
    *,
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[mm.ProposeMemoryCandidatesRequest, list[mm.MemoryCandidate]]:
    """Propose 1 to 100 facts found by your own extractor; returns them as
    pending candidates, in order. A fresh ``request_id`` is generated unless
    given; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id or candidate (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = mm.ProposeMemoryCandidatesRequest(
        parent=user_name(user),
        candidates=[candidate_message(user, c) for c in candidates],
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("ProposeMemoryCandidates"), request, _candidates, timeout)


def list_memory_candidates_page(
    user: str,
    *,
    include_resolved: bool = False,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[mm.ListMemoryCandidatesRequest, Page[mm.MemoryCandidate]]:
    """One page of candidates, newest first: ``(items, next_page_token)``. Only
    pending ones unless ``include_resolved``.

    Raises:
        InvalidArgumentError: a malformed id, a negative size, a foreign page
            token (``INVALID_NAME``, ``INVALID_FIELD``, ``INVALID_PAGE_TOKEN``).
    """
    request = mm.ListMemoryCandidatesRequest(
        parent=user_name(user),
        page_size=page_size,
        page_token=page_token,
        include_resolved=include_resolved,
    )
    return UnaryCall(rpc("ListMemoryCandidates"), request, _candidates_page, timeout)


def list_memory_candidates(
    user: str,
    *,
    include_resolved: bool = False,
    page_size: int = 0,
    timeout: float | None = None,
) -> PagedCall[mm.MemoryCandidate]:
    """Iterate over candidates, newest first (only pending ones unless
    ``include_resolved``), page by page.

    Raises:
        InvalidArgumentError: a malformed id or a negative page size.
    """
    return PagedCall(
        lambda token: list_memory_candidates_page(
            user,
            include_resolved=include_resolved,
            page_size=page_size,
            page_token=token,
            timeout=timeout,
        )
    )


def approve_memory_candidate(
    user: str, candidate: str, *, timeout: float | None = None
) -> UnaryCall[mm.ApproveMemoryCandidateRequest, mm.ApproveMemoryCandidateResponse]:
    """Approve a pending candidate (its id or name): it is saved as an entry.
    Returns the response: the saved ``memory`` and the approved ``candidate``.
    Approving again returns the same entry.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
        NotFoundError: no such candidate.
        FailedPreconditionError: it was rejected or cancelled
            (``CANDIDATE_RESOLVED``).
    """
    request = mm.ApproveMemoryCandidateRequest(name=memory_candidate_name(user, candidate))
    return UnaryCall(rpc("ApproveMemoryCandidate"), request, lambda response: response, timeout)


def reject_memory_candidate(
    user: str, candidate: str, *, timeout: float | None = None
) -> UnaryCall[mm.RejectMemoryCandidateRequest, mm.MemoryCandidate]:
    """Reject a pending candidate (its id or name): it is discarded. Returns
    the rejected candidate; rejecting again returns it again.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
        NotFoundError: no such candidate.
        FailedPreconditionError: it was approved or cancelled
            (``CANDIDATE_RESOLVED``).
    """
    request = mm.RejectMemoryCandidateRequest(name=memory_candidate_name(user, candidate))
    return UnaryCall(rpc("RejectMemoryCandidate"), request, _candidate, timeout)
