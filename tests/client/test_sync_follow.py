"""The change feed through the Python clients: list_changes, watch_changes and
the resuming followers, against real servers (a server restart, a consumer
too slow for the server, an expired cursor, a cursor of another database, a
proxy in front of the server failing a watch with INTERNAL). A watch whose
PostgreSQL backend is killed: tests/concurrency/test_postgres_faults.py."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from mnemo.client import (
    AsyncChangeFollower,
    AsyncMnemoClient,
    Change,
    ChangeFollower,
    Heartbeat,
    MnemoClient,
    MnemoError,
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


def _follow_through_a_resync(
    client: MnemoClient, follower: ChangeFollower, resyncs: list[Any]
) -> tuple[list[int], int]:
    """Iterate ``follower`` until its handler appended to ``resyncs``, then
    append one change: the cursors received up to it, and its cursor."""
    following = Following(follower)
    try:
        deadline = time.monotonic() + WAIT_S
        while not resyncs:
            assert time.monotonic() < deadline, f"no resync ({following.error!r})"
            time.sleep(0.05)
        newer = _append(client, "u1", "after the resync")
        received = following.until(newer)
    finally:
        following.stop()
    assert following.error is None
    return received, newer


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
    received, newer = _follow_through_a_resync(client, follower, resyncs)
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


def test_the_follower_resyncs_on_a_cursor_of_another_database(
    sqlite_url: str, tmp_path: Path
) -> None:
    with running_server(f"sqlite:///{tmp_path / 'other.db'}") as other, MnemoClient(other) as far:
        far.create_conversation("u1", "chat")
        foreign = _append(far, "u1", "a", "b", "c")
    with (
        running_server(sqlite_url, watch_heartbeat_seconds=0.2) as target,
        MnemoClient(target) as client,
    ):
        client.create_conversation("u1", "chat")
        latest = _append(client, "u1", "x")
        assert latest < foreign
        reasons: list[tuple[str, str]] = []
        follower = ChangeFollower(
            client,
            "u1",
            after_cursor=foreign,
            on_resync=lambda error: reasons.append((error.reason, error.metadata["latest_cursor"])),
        )
        received, newer = _follow_through_a_resync(client, follower, reasons)
    assert reasons == [("CURSOR_AHEAD", str(latest))]
    assert received == list(range(latest + 1, newer + 1))


def test_without_a_resync_handler_a_cursor_ahead_is_raised(sqlite_url: str) -> None:
    with running_server(sqlite_url) as target, MnemoClient(target) as client:
        with pytest.raises(OutOfRangeError) as raised:
            next(iter(ChangeFollower(client, "u1", after_cursor=3)))
    assert (raised.value.reason, raised.value.metadata["latest_cursor"]) == ("CURSOR_AHEAD", "0")


_SYNC = "mnemo.v1.SyncService"


@contextmanager
def faulty_proxy(upstream: str, fail_after: int) -> Iterator[str]:
    """A gRPC proxy for SyncService in front of ``upstream`` whose first
    WatchChanges relays ``fail_after`` messages, then ends with a bare
    ``INTERNAL`` (no Mnemo details, as a proxy or load balancer would);
    later calls are relayed untouched. Yields its target."""
    channel = grpc.insecure_channel(upstream)
    watches = 0
    lock = threading.Lock()

    def watch(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        nonlocal watches
        with lock:
            watches += 1
            first = watches == 1
        call = channel.unary_stream(f"/{_SYNC}/WatchChanges")(
            request, timeout=context.time_remaining()
        )
        context.add_callback(call.cancel)
        for sent, message in enumerate(call):
            if first and sent == fail_after:
                call.cancel()
                context.abort(grpc.StatusCode.INTERNAL, "upstream connect error")
            yield message

    def list_changes(request: bytes, context: grpc.ServicerContext) -> bytes:
        response: bytes = channel.unary_unary(f"/{_SYNC}/ListChanges")(request)
        return response

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                _SYNC,
                {
                    "WatchChanges": grpc.unary_stream_rpc_method_handler(watch),
                    "ListChanges": grpc.unary_unary_rpc_method_handler(list_changes),
                },
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait(5)
        channel.close()


def test_the_follower_resumes_after_an_internal_error_from_a_proxy(sqlite_url: str) -> None:
    with running_server(sqlite_url, watch_heartbeat_seconds=0.2) as target:
        with MnemoClient(target) as writer:
            writer.create_conversation("u1", "chat")
            latest = _append(writer, "u1", "a", "b", "c")
        errors: list[MnemoError] = []
        with faulty_proxy(target, fail_after=2) as proxy, MnemoClient(proxy) as client:
            following = Following(
                ChangeFollower(client, "u1", on_error=errors.append, max_backoff=0.5)
            )
            try:
                received = following.until(latest)
            finally:
                following.stop()
    assert following.error is None
    assert [(e.code, e.reason) for e in errors] == [(grpc.StatusCode.INTERNAL, "")]
    assert received == list(range(1, latest + 1))  # no gap, no duplicate across the fault


async def test_the_async_follower_resyncs_on_a_cursor_ahead(sqlite_url: str) -> None:
    with running_server(sqlite_url) as target:
        async with AsyncMnemoClient(target) as client:
            reasons: list[str] = []

            async def resync(error: OutOfRangeError) -> None:
                reasons.append(error.reason)

            follower = AsyncChangeFollower(client, "u1", after_cursor=7, on_resync=resync)
            async for event in follower:
                assert isinstance(event, Heartbeat)  # caught up with the (empty) feed
                break
    assert (reasons, follower.cursor) == (["CURSOR_AHEAD"], 0)
