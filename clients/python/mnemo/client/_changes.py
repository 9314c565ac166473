"""Change-feed calls (``mnemo.v1.SyncService``): a user's changes after a
cursor, listed in pages or watched live.

Each function builds one call; its docstring is the client method's docstring.
``mnemo.client.ChangeFollower`` builds on ``watch_changes`` to follow a feed
forever, resuming by itself.
"""

from __future__ import annotations

from mnemo.client._calls import Rpc, StreamCall, UnaryCall
from mnemo.client._names import user_name
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1.sync_pb2_grpc import SyncServiceStub


def _rpc(method: str) -> Rpc:
    return Rpc(SyncServiceStub, method)


def _event(response: sy.WatchChangesResponse) -> list[sy.WatchChangesResponse]:
    return [response]


def list_changes(
    user: str, *, after_cursor: int = 0, page_size: int = 0, timeout: float | None = None
) -> UnaryCall[sy.ListChangesRequest, sy.ListChangesResponse]:
    """One page of the user's changes after ``after_cursor`` (0: from the
    oldest retained), oldest first: ``changes``, ``next_cursor`` (pass it as
    ``after_cursor`` for the next page), ``latest_cursor`` (the newest when
    read; the page is the last one when ``next_cursor`` reached it) and
    ``oldest_cursor``. ``page_size`` 0 means 100; at most 1000.

    Raises:
        InvalidArgumentError: a malformed user id or a negative cursor or size.
        OutOfRangeError: ``CURSOR_EXPIRED``: changes after the cursor are no
            longer retained (``metadata["oldest_cursor"]``); ``CURSOR_AHEAD``:
            the cursor is beyond the user's latest (``metadata["latest_cursor"]``),
            so it came from another database. Either way list the resources
            again, then follow the feed from ``metadata["latest_cursor"]``.
        UnavailableError: the server or its database cannot serve now; retry.
    """
    request = sy.ListChangesRequest(
        parent=user_name(user), after_cursor=after_cursor, page_size=page_size
    )
    return UnaryCall(_rpc("ListChanges"), request, lambda response: response, timeout)


def watch_changes(
    user: str, *, after_cursor: int = 0, timeout: float | None = None
) -> StreamCall[sy.WatchChangesRequest, sy.WatchChangesResponse]:
    """Iterate over the user's changes after ``after_cursor``: the backlog,
    then live changes as they commit, each a ``WatchChangesResponse`` holding
    a ``change`` or, when the backlog is sent and then while nothing happens,
    a ``heartbeat`` (with the user's latest cursor). The iteration ends when
    the server shuts down; watch again from the last cursor received (no gap,
    no duplicate). ``timeout`` (by default the client's) bounds the whole
    stream. ``ChangeFollower`` does all the resuming for you.

    Raises:
        InvalidArgumentError: a malformed user id or a negative cursor.
        OutOfRangeError: ``CURSOR_EXPIRED`` or ``CURSOR_AHEAD``, as for
            ``list_changes``, before anything is yielded.
        UnavailableError: the server or its database cannot serve now (also
            in the middle of the stream, e.g. PostgreSQL restarting); watch
            again from the last cursor received, after a backoff.
        AbortedError: ``WATCH_LAGGING``: the iteration did not take messages
            fast enough; watch again from the last cursor received.
        ResourceExhaustedError: the server runs as many watches as it allows.
        DeadlineExceededError: ``timeout`` passed.
    """
    request = sy.WatchChangesRequest(parent=user_name(user), after_cursor=after_cursor)
    return StreamCall(_rpc("WatchChanges"), request, _event, timeout)
