"""History calls (``mnemo.v1.ConversationService``): messages, failed runs, compaction.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from mnemo.client._calls import Page, PagedCall, StreamCall, UnaryCall
from mnemo.client._conversations import rpc, struct
from mnemo.client._names import conversation_name, message_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.v1 import conversations_pb2 as cv

#: A message as the SDK shapes it: a JSON object, or its JSON text (sent verbatim).
MessageLike = Mapping[str, Any] | str


class Snapshot(NamedTuple):
    """What ``snapshot_history`` and ``replace_history_prefix`` return."""

    #: Opaque; pass it to ``replace_history_prefix``.
    revision: str
    #: The projection: replacement messages (``compacted``), then the canonical ones after them.
    messages: list[cv.HistoryMessage]


def compact_json(value: object) -> str:
    """Any JSON value as compact UTF-8 JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def message_json(message: MessageLike) -> str:
    """The JSON text of ``message``: a string as is, a mapping as compact UTF-8 JSON."""
    return message if isinstance(message, str) else compact_json(message)


def history_messages(
    messages: Iterable[MessageLike], said_at: Sequence[datetime.datetime | None] | None = None
) -> list[cv.HistoryMessage]:
    """``messages`` as ``HistoryMessage``s, each dated by the same position of
    ``said_at`` when given (when it was said; ``None``: unset, the server's
    time; a naive datetime is read as UTC). Raises ``ValueError`` when
    ``said_at`` has another length."""
    made = [cv.HistoryMessage(message_json=message_json(m)) for m in messages]
    if said_at is None:
        return made
    if len(said_at) != len(made):
        raise ValueError(f"said_at has {len(said_at)} times for {len(made)} messages")
    for message, when in zip(made, said_at, strict=True):
        if when is not None:
            message.event_time.FromDatetime(when)
    return made


def _messages_page(response: cv.ListMessagesResponse) -> Page[cv.HistoryMessage]:
    return Page(list(response.messages), response.next_page_token)


def _streamed(response: cv.StreamMessagesResponse) -> list[cv.HistoryMessage]:
    return list(response.messages)


def _failed_run(response: cv.RecordFailedRunResponse) -> cv.FailedRun:
    return response.failed_run


def _failed_runs_page(response: cv.ListFailedRunsResponse) -> Page[cv.FailedRun]:
    return Page(list(response.failed_runs), response.next_page_token)


def _cleared(response: cv.ClearMessagesResponse) -> cv.Conversation:
    return response.conversation


def _message(response: cv.GetMessageResponse) -> cv.HistoryMessage:
    return response.message


def _snapshot(response: Any) -> Snapshot:
    return Snapshot(response.revision, list(response.messages))


def append_messages(
    user: str,
    conversation: str,
    messages: Iterable[MessageLike],
    *,
    run_id: str = "",
    turn: int = 0,
    expected_position: int | None = None,
    metadata: Mapping[str, Any] | None = None,
    request_id: str | None = None,
    timeout: float | None = None,
    said_at: Sequence[datetime.datetime | None] | None = None,
) -> UnaryCall[cv.AppendMessagesRequest, cv.AppendMessagesResponse]:
    """Append messages, in order, at the end of the history (creating the conversation).

    Each message is an SDK-shaped JSON object (``{"role": "user", "content":
    ...}``), sent as compact UTF-8 JSON, or a JSON string sent verbatim.
    Returns the response: ``messages`` with their positions, and the
    ``conversation`` after the append. With ``expected_position`` the append
    happens only if the first message gets that position. ``metadata`` is used
    only if this call creates the conversation. A fresh ``request_id`` is
    generated unless given, so a retried call writes nothing twice; pass ``""``
    to send none. ``said_at``: when each message was said, for history
    appended after the fact (``HistoryMessage.event_time``; 1970 to 24 hours
    ahead of the server's clock).

    Raises:
        InvalidArgumentError: a malformed id, message or metadata
            (``INVALID_NAME``, ``INVALID_FIELD``, ``INVALID_MESSAGE``,
            ``FIELD_TOO_LARGE``).
        PositionMismatchError: ``expected_position`` is not the next position
            (``ABORTED``); nothing was written.
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = cv.AppendMessagesRequest(
        conversation=conversation_name(user, conversation),
        messages=history_messages(messages, said_at),
        run_id=run_id,
        turn=turn,
        request_id=request_id_or_new(request_id),
        expected_position=expected_position,
        metadata=struct(metadata),
    )
    return UnaryCall(rpc("AppendMessages"), request, lambda response: response, timeout)


def list_messages_page(
    user: str,
    conversation: str,
    *,
    start_position: int = 0,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[cv.ListMessagesRequest, Page[cv.HistoryMessage]]:
    """One page of the canonical history in position order, from ``start_position``.

    Returns ``(items, next_page_token)``; the token is empty on the last page
    (``start_position`` is ignored with a token).

    Raises:
        InvalidArgumentError: a malformed id, a negative size or position, a
            foreign page token (``INVALID_NAME``, ``INVALID_FIELD``,
            ``INVALID_PAGE_TOKEN``).
        NotFoundError: no such conversation.
    """
    request = cv.ListMessagesRequest(
        parent=conversation_name(user, conversation),
        page_size=page_size,
        page_token=page_token,
        start_position=start_position,
    )
    return UnaryCall(rpc("ListMessages"), request, _messages_page, timeout)


def list_messages(
    user: str,
    conversation: str,
    *,
    start_position: int = 0,
    page_size: int = 0,
    timeout: float | None = None,
) -> PagedCall[cv.HistoryMessage]:
    """Iterate over the canonical history in position order, page by page.

    Each page has its own deadline; errors are raised by the iteration. For one
    consistent view of a long history use ``stream_messages``.

    Raises:
        InvalidArgumentError: a malformed id, a negative size or position.
        NotFoundError: no such conversation.
    """
    return PagedCall(
        lambda token: list_messages_page(
            user,
            conversation,
            start_position=start_position,
            page_size=page_size,
            page_token=token,
            timeout=timeout,
        )
    )


def stream_messages(
    user: str,
    conversation: str,
    *,
    start_position: int = 0,
    batch_size: int = 0,
    timeout: float | None = None,
) -> StreamCall[cv.StreamMessagesRequest, cv.HistoryMessage]:
    """Iterate over the canonical history as it stood when the stream began, in batches.

    Messages appended meanwhile are not streamed. ``timeout`` bounds the whole
    stream. Errors are raised by the iteration.

    Raises:
        InvalidArgumentError: a malformed id, a negative size or position.
        NotFoundError: no such conversation.
        AbortedError: ``CONCURRENT_MODIFICATION``: the history was cleared or the
            conversation deleted during the stream; stream it again.
    """
    request = cv.StreamMessagesRequest(
        parent=conversation_name(user, conversation),
        start_position=start_position,
        batch_size=batch_size,
    )
    return StreamCall(rpc("StreamMessages"), request, _streamed, timeout)


def get_message(
    user: str, conversation: str, position: int, *, timeout: float | None = None
) -> UnaryCall[cv.GetMessageRequest, cv.HistoryMessage]:
    """Read the canonical message at ``position`` (0-based).

    Raises:
        InvalidArgumentError: a malformed id or a negative position (``INVALID_NAME``).
        NotFoundError: no such conversation, or no message at that position.
    """
    request = cv.GetMessageRequest(name=message_name(user, conversation, position))
    return UnaryCall(rpc("GetMessage"), request, _message, timeout)


def pop_messages(
    user: str,
    conversation: str,
    count: int = 1,
    *,
    expected_next_position: int | None = None,
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[cv.PopMessagesRequest, cv.PopMessagesResponse]:
    """Remove the last ``count`` messages (1 to 1000; fewer from a shorter history).

    Returns the response: the removed ``messages`` oldest first (none from an
    empty history) and the ``conversation`` after the pop, whose
    ``message_count`` went back by their number. With
    ``expected_next_position`` the pop happens only if the conversation's
    message count is still that, so a caller removes exactly the tail it read.
    A fresh ``request_id`` is generated unless given, so a retried call removes
    nothing twice; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id, ``count`` outside 1..1000
            (``INVALID_NAME``, ``INVALID_FIELD``).
        NotFoundError: no such conversation.
        PositionMismatchError: ``expected_next_position`` is not the next
            position (``ABORTED``; ``metadata["next_position"]``); nothing was removed.
        HistoryCompactedError: a compaction checkpoint covers a message to
            remove (``FAILED_PRECONDITION``); nothing was removed.
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = cv.PopMessagesRequest(
        conversation=conversation_name(user, conversation),
        count=count,
        expected_next_position=expected_next_position,
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("PopMessages"), request, lambda response: response, timeout)


def clear_messages(
    user: str, conversation: str, *, timeout: float | None = None
) -> UnaryCall[cv.ClearMessagesRequest, cv.Conversation]:
    """Remove every message and compaction checkpoint; positions restart at 0.

    Failed runs are kept. Returns the conversation, now empty.

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
        NotFoundError: no such conversation.
    """
    request = cv.ClearMessagesRequest(conversation=conversation_name(user, conversation))
    return UnaryCall(rpc("ClearMessages"), request, _cleared, timeout)


def record_failed_run(
    user: str,
    conversation: str,
    *,
    run_id: str,
    error: str,
    error_code: str = "",
    error_details: object = None,
    messages: Iterable[MessageLike] = (),
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[cv.RecordFailedRunRequest, cv.FailedRun]:
    """Record a failed run with its error and partial messages, apart from the history.

    ``error`` is the human-readable message, ``error_code`` the SDK's code and
    ``error_details`` any JSON value (sent as compact JSON). A fresh
    ``request_id`` is generated unless given; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id or message, an empty ``run_id`` or
            ``error`` (``INVALID_NAME``, ``INVALID_FIELD``, ``INVALID_MESSAGE``,
            ``FIELD_TOO_LARGE``).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    details = "" if error_details is None else compact_json(error_details)
    request = cv.RecordFailedRunRequest(
        conversation=conversation_name(user, conversation),
        run_id=run_id,
        error=cv.RunError(message=error, code=error_code, details_json=details),
        messages=history_messages(messages),
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("RecordFailedRun"), request, _failed_run, timeout)


def list_failed_runs_page(
    user: str,
    conversation: str,
    *,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[cv.ListFailedRunsRequest, Page[cv.FailedRun]]:
    """One page of the conversation's failed runs, newest first: ``(items, next_page_token)``.

    Raises:
        InvalidArgumentError: a malformed id, a negative size, a foreign page
            token (``INVALID_NAME``, ``INVALID_FIELD``, ``INVALID_PAGE_TOKEN``).
        NotFoundError: no such conversation.
    """
    request = cv.ListFailedRunsRequest(
        parent=conversation_name(user, conversation), page_size=page_size, page_token=page_token
    )
    return UnaryCall(rpc("ListFailedRuns"), request, _failed_runs_page, timeout)


def list_failed_runs(
    user: str, conversation: str, *, page_size: int = 0, timeout: float | None = None
) -> PagedCall[cv.FailedRun]:
    """Iterate over the conversation's failed runs, newest first, page by page.

    Raises:
        InvalidArgumentError: a malformed id or a negative size.
        NotFoundError: no such conversation.
    """
    return PagedCall(
        lambda token: list_failed_runs_page(
            user, conversation, page_size=page_size, page_token=token, timeout=timeout
        )
    )


def snapshot_history(
    user: str, conversation: str, *, timeout: float | None = None
) -> UnaryCall[cv.SnapshotHistoryRequest, Snapshot]:
    """The compaction projection and its revision: ``(revision, messages)``.

    ``messages`` are the latest checkpoint's replacement messages (``compacted``)
    followed by every canonical message after the prefix they replaced.

    Raises:
        InvalidArgumentError: a malformed user or conversation id (``INVALID_NAME``).
        NotFoundError: no such conversation.
    """
    request = cv.SnapshotHistoryRequest(conversation=conversation_name(user, conversation))
    return UnaryCall(rpc("SnapshotHistory"), request, _snapshot, timeout)


def replace_history_prefix(
    user: str,
    conversation: str,
    *,
    revision: str,
    message_count: int,
    replacement: Iterable[MessageLike],
    run_id: str = "",
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[cv.ReplaceHistoryPrefixRequest, Snapshot]:
    """Compact: replace the projection's first ``message_count`` messages with ``replacement``.

    Canonical messages are never deleted; a new checkpoint is recorded. Returns
    the new ``(revision, messages)``. Appends since the snapshot are fine;
    another compaction or a clear makes ``revision`` stale. A fresh
    ``request_id`` is generated unless given; pass ``""`` to send none.

    Raises:
        InvalidArgumentError: a malformed id or message, a ``message_count``
            outside 1..projection size (``INVALID_NAME``, ``INVALID_FIELD``,
            ``INVALID_MESSAGE``).
        NotFoundError: no such conversation.
        RevisionStaleError: the history was compacted or cleared since the
            snapshot (``ABORTED``); nothing changed.
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    request = cv.ReplaceHistoryPrefixRequest(
        conversation=conversation_name(user, conversation),
        revision=revision,
        message_count=message_count,
        replacement=history_messages(replacement),
        run_id=run_id,
        request_id=request_id_or_new(request_id),
    )
    return UnaryCall(rpc("ReplaceHistoryPrefix"), request, _snapshot, timeout)
