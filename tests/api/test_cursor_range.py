"""A change-feed cursor beyond the user's latest one (``after_cursor >
latest_cursor``) was not issued by this database: ListChanges and
WatchChanges refuse it with ``OUT_OF_RANGE`` ``CURSOR_AHEAD`` (metadata
``latest_cursor``) instead of an empty page or a watch that never sends a
change. A cursor equal to the latest is fine, and a user without changes
has latest 0. Through a real server, on every backend."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from mnemo.client import MnemoClient
from mnemo.v1 import sync_pb2 as sy
from mnemo.v1 import sync_pb2_grpc
from tests.api.changes import PARENT, USER, write
from tests.support.rpc_errors import ErrorDetails, rpc_failure
from tests.support.server import running_server

Sync = sync_pb2_grpc.SyncServiceStub


@pytest.fixture
def sync(channel: grpc.Channel) -> Sync:
    return Sync(channel)


def _listed(sync: Sync, after: int) -> ErrorDetails:
    request = sy.ListChangesRequest(parent=PARENT, after_cursor=after)
    return rpc_failure(sync.ListChanges, request, timeout=10)


def _watched(sync: Sync, after: int) -> ErrorDetails:
    request = sy.WatchChangesRequest(parent=PARENT, after_cursor=after)
    return rpc_failure(lambda: list(sync.WatchChanges(request, timeout=10)))


def _first_watched(sync: Sync, after: int) -> sy.WatchChangesResponse:
    call = sync.WatchChanges(sy.WatchChangesRequest(parent=PARENT, after_cursor=after), timeout=10)
    try:
        return next(iter(call))
    finally:
        call.cancel()


def _is_ahead(failure: ErrorDetails, latest: int) -> None:
    assert (failure.code, failure.reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_AHEAD")
    assert failure.metadata["latest_cursor"] == str(latest)
    assert f"from cursor {latest}" in failure.message


def test_a_user_without_changes_has_latest_zero(sync: Sync) -> None:
    page = sync.ListChanges(sy.ListChangesRequest(parent=PARENT, after_cursor=0), timeout=10)
    assert (list(page.changes), page.next_cursor, page.latest_cursor) == ([], 0, 0)
    assert _first_watched(sync, 0).heartbeat.cursor == 0
    _is_ahead(_listed(sync, 1), 0)
    _is_ahead(_watched(sync, 1), 0)


def test_a_cursor_beyond_the_latest_is_refused_and_the_latest_itself_is_fine(
    server: str, sync: Sync
) -> None:
    with MnemoClient(server) as mnemo:
        mnemo.create_conversation(USER, "chat")
        latest = write(mnemo, 3)[-1]
    page = sync.ListChanges(sy.ListChangesRequest(parent=PARENT, after_cursor=latest), timeout=10)
    assert (list(page.changes), page.next_cursor, page.latest_cursor) == ([], latest, latest)
    assert _first_watched(sync, latest).heartbeat.cursor == latest
    for after in (latest + 1, latest + 1000):
        _is_ahead(_listed(sync, after), latest)
        _is_ahead(_watched(sync, after), latest)


def test_a_cursor_from_another_database_is_refused(server: str, tmp_path: Path) -> None:
    """A device that synced with another deployment, then points at this one."""
    with running_server(f"sqlite:///{tmp_path / 'other.db'}") as other, MnemoClient(other) as far:
        far.create_conversation(USER, "chat")
        foreign = write(far, 5)[-1]
    with MnemoClient(server) as near:
        near.create_conversation(USER, "chat")
        latest = write(near, 1)[-1]
        assert latest < foreign
        with grpc.insecure_channel(server) as channel:
            _is_ahead(_listed(Sync(channel), foreign), latest)
            _is_ahead(_watched(Sync(channel), foreign), latest)
