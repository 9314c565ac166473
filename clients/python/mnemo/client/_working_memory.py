"""Working-memory calls (``mnemo.v1.WorkingMemoryService``).

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from mnemo.client._calls import Rpc, UnaryCall
from mnemo.client._names import memory_state_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1.working_memory_pb2_grpc import WorkingMemoryServiceStub


class Remembered(NamedTuple):
    """What ``remember_exchange`` returns."""

    #: The working memory after the append.
    state: wm.MemoryState
    #: The exchanges that fell off ``state.recent``, oldest first: fold them into the summary.
    evicted: list[wm.Exchange]


ExchangeLike = wm.Exchange | Mapping[str, Any]


def _state(response: Any) -> wm.MemoryState:
    state: wm.MemoryState = response.memory_state
    return state


def _remembered(response: wm.RememberExchangeResponse) -> Remembered:
    return Remembered(response.memory_state, list(response.evicted))


def _rpc(method: str) -> Rpc:
    return Rpc(WorkingMemoryServiceStub, method)


def get_memory_state(
    user: str, conversation: str | None = None, *, timeout: float | None = None
) -> UnaryCall[wm.GetMemoryStateRequest, wm.MemoryState]:
    """Read the working memory of ``conversation`` (``None``: the default conversation).

    A state never written comes back empty, with an empty etag.

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
    """
    request = wm.GetMemoryStateRequest(name=memory_state_name(user, conversation))
    return UnaryCall(_rpc("GetMemoryState"), request, _state, timeout)


def save_memory_state(
    user: str,
    conversation: str | None = None,
    *,
    summary: str,
    recent: Iterable[ExchangeLike],
    etag: str = "",
    timeout: float | None = None,
) -> UnaryCall[wm.SaveMemoryStateRequest, wm.MemoryState]:
    """Replace the summary and recent exchanges as a whole; returns the stored state.

    ``recent`` holds ``Exchange`` messages or mappings such as
    ``{"ask": ..., "answer": ..., "at": datetime}``, oldest first. With an
    ``etag``, the write happens only if it is still current.

    Raises:
        InvalidArgumentError: a malformed id or exchange (``INVALID_NAME``,
            ``INVALID_FIELD``, ``FIELD_TOO_LARGE``), or a summary over the
            server's word budget (``SUMMARY_OVER_BUDGET``).
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    state = wm.MemoryState(
        name=memory_state_name(user, conversation), summary=summary, recent=recent, etag=etag
    )
    request = wm.SaveMemoryStateRequest(memory_state=state)
    return UnaryCall(_rpc("SaveMemoryState"), request, _state, timeout)


def remember_exchange(
    user: str,
    conversation: str | None = None,
    *,
    ask: str,
    answer: str,
    at: datetime.datetime | None = None,
    keep_recent: int = 0,
    summary: str | None = None,
    etag: str = "",
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[wm.RememberExchangeRequest, Remembered]:
    """Append one exchange, keep the newest ``keep_recent`` (0: server default, 3) verbatim.

    Returns ``(state, evicted)``: the new state and the exchanges that fell
    off, oldest first, for the caller's scribe to fold into the summary. A
    ``summary`` replaces the summary in the same transaction. ``at`` defaults
    to the server's clock. A fresh ``request_id`` is generated unless given, so
    a retried call never remembers the exchange twice; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id, an empty ``ask``, a ``keep_recent``
            over the server maximum (``INVALID_NAME``, ``INVALID_FIELD``,
            ``FIELD_TOO_LARGE``), a summary over budget (``SUMMARY_OVER_BUDGET``).
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
        RequestIdReusedError: ``request_id`` was used for a different request
            (``FAILED_PRECONDITION``).
    """
    request = wm.RememberExchangeRequest(
        name=memory_state_name(user, conversation),
        exchange=wm.Exchange(ask=ask, answer=answer, at=at),
        keep_recent=keep_recent,
        summary=summary,
        etag=etag,
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(_rpc("RememberExchange"), request, _remembered, timeout)


def clear_memory_state(
    user: str,
    conversation: str | None = None,
    *,
    etag: str = "",
    timeout: float | None = None,
) -> UnaryCall[wm.ClearMemoryStateRequest, wm.MemoryState]:
    """Empty the summary and recent exchanges; returns the empty state with its new etag.

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    request = wm.ClearMemoryStateRequest(name=memory_state_name(user, conversation), etag=etag)
    return UnaryCall(_rpc("ClearMemoryState"), request, _state, timeout)
