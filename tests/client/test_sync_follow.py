"""The change feed through the Python clients: list_changes, watch_changes and
the resuming followers, against real servers (a server restart, a consumer
too slow for the server, an expired cursor)."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo.client import (
    AsyncChangeFollower,
    AsyncMnemoClient,
    Change,
    ChangeFollower,
    Heartbeat,
    MnemoClient,
    OutOfRangeError,
)
from tests.support.change_feed import prune_all_changes
from tests.support.server import running_server
from tests.support.subprocess_server import subprocess_server

pytestmark = pytest.mark.sqlite

WAIT_S = 30.0


def _append(client: MnemoClient, user: str, *contents: str) -> int:
    """One append per content; the cursor of the last."""
    cursor = 0
    for content in contents:
        response = client.append_messages(user, "chat", [{"role": "user", "content": content}])
        cursor = response.change_cursor
    return cursor


class Following:
    """A ``ChangeFollower`` iterated by a thread; the change cursors in a queue."""

    def __init__(self, follower: ChangeFollower, pause_on_first_s: float = 0.0) -> None:
        self.follower = follower
        self.cursors: queue.Queue[int] = queue.Queue()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._pause = pause_on_first_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self.follower:
                if isinstance(event, Change):
                    if self._pause:
                        time.sleep(self._pause)  # a slow consumer: the server gives up on it
                        self._pause = 0.0
                    self.cursors.put(event.cursor)
                if self._stop.is_set():
                    return
        except BaseException as error:
            self.error = error

    def until(self, cursor: int) -> list[int]:
        """The cursors received up to ``cursor``."""
        got: list[int] = []
        while not got or got[-1] < cursor:
            got.append(self.cursors.get(timeout=WAIT_S))
        return got

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(WAIT_S)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mnemo.db'}"


def test_list_changes_and_watch_changes(sqlite_url: str) -> None:
    with running_server(sqlite_url) as target, MnemoClient(target) as client:
        client.create_conversation("u1", "chat")
        last = _append(client, "u1", "a")
        page = client.list_changes("u1", page_size=1)
        assert ([c.cursor for c in page.changes], page.next_cursor) == ([1], 1)
        assert page.latest_cursor == last
        events = client.watch_changes("u1", after_cursor=1)
        received = []
        for event in events:
            if event.HasField("heartbeat"):
                assert event.heartbeat.cursor == last
                break
            received.append(event.change.cursor)
        assert received == list(range(2, last + 1))


def test_the_follower_resumes_across_a_server_restart(tmp_path: Path, sqlite_url: str) -> None:
    with (
        subprocess_server(
            sqlite_url, "--watch-heartbeat-seconds", "0.2", log_dir=tmp_path / "logs"
        ) as server,
        MnemoClient(server.target) as client,
    ):
        client.create_conversation("u1", "chat")
        before = _append(client, "u1", "a", "b")
        following = Following(ChangeFollower(client, "u1", max_backoff=0.5))
        try:
            received = following.until(before)
            server.restart()  # SIGTERM: the watch ends cleanly; then UNAVAILABLE until up
            # Another device writes: its own connection (gRPC shares one between the
            # channels of a process, and the follower's may still be backing off).
            own = [("grpc.use_local_subchannel_pool", 1)]
            with MnemoClient(server.target, options=own) as writer:
                after = _append(writer, "u1", "c", "d")
            received += following.until(after)
        finally:
            following.stop()
        assert following.error is None
        assert received == list(range(1, after + 1))
        assert following.follower.cursor >= after


def test_the_follower_resumes_when_the_server_gives_up_on_a_slow_consumer(
    sqlite_url: str,
) -> None:
    with (
        running_server(
            sqlite_url, watch_send_timeout_seconds=0.3, watch_heartbeat_seconds=0.2
        ) as target,
        MnemoClient(target, timeout=60) as client,
    ):
        client.create_conversation("u1", "chat")
        for batch in range(5):
            big = [{"role": "user", "content": f"{batch}.{i}" + "x" * 200_000} for i in range(10)]
            client.append_messages("u1", "chat", big)
        latest = client.list_changes("u1", page_size=1).latest_cursor
        following = Following(ChangeFollower(client, "u1"), pause_on_first_s=2.0)
        try:
            received = following.until(latest)
        finally:
            following.stop()
    assert following.error is None
    assert received == list(range(1, latest + 1))


@pytest.fixture
def expired_feed(sqlite_url: str) -> Iterator[tuple[MnemoClient, int]]:
    """A client of a server whose feed for ``u1`` no longer has cursor 2; the
    latest cursor."""
    with (
        running_server(sqlite_url, watch_heartbeat_seconds=0.2) as target,
        MnemoClient(target) as client,
    ):
        client.create_conversation("u1", "chat")
        _append(client, "u1", "a", "b", "c")
        prune_all_changes(sqlite_url)
        yield client, _append(client, "u1", "d")


def test_the_follower_resyncs_on_an_expired_cursor(expired_feed: tuple[MnemoClient, int]) -> None:
    client, latest = expired_feed
    resyncs: list[int] = []
    follower = ChangeFollower(
        client, "u1", after_cursor=1, on_expired=lambda: resyncs.append(follower.cursor)
    )
    following = Following(follower)
    try:
        while not resyncs:
            time.sleep(0.05)
        newer = _append(client, "u1", "e")
        received = following.until(newer)
    finally:
        following.stop()
    assert resyncs == [1]
    # After the resync, only what came after the latest cursor at that time.
    assert received == list(range(latest + 1, newer + 1))


def test_the_follower_raises_an_expired_cursor_without_a_resync(
    expired_feed: tuple[MnemoClient, int],
) -> None:
    client, _ = expired_feed
    with pytest.raises(OutOfRangeError) as raised:
        next(iter(ChangeFollower(client, "u1", after_cursor=1)))
    assert raised.value.reason == "CURSOR_EXPIRED"


async def test_the_async_follower_sends_backlog_heartbeat_then_live(sqlite_url: str) -> None:
    with running_server(sqlite_url) as target, MnemoClient(target) as writer:
        writer.create_conversation("u1", "chat")
        backlog = _append(writer, "u1", "a")
        async with AsyncMnemoClient(target) as client:
            page = await client.list_changes("u1")
            assert page.latest_cursor == backlog
            follower = AsyncChangeFollower(client, "u1")
            received: list[int] = []
            live = 0
            async for event in follower:
                if isinstance(event, Heartbeat) and not live:
                    assert received == list(range(1, backlog + 1))
                    live = await asyncio.to_thread(_append, writer, "u1", "b")
                elif isinstance(event, Change):
                    received.append(event.cursor)
                    if live and event.cursor == live:
                        break
            assert received == list(range(1, live + 1))
            assert follower.cursor == live
