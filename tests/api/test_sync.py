"""SyncService through a real server on both backends: ListChanges pages and
bounds, WatchChanges backlog then live, resuming without gap or duplicate,
heartbeats, expired cursors, a consumer that stops reading, the bound on
watches, a clean end at shutdown, and another user's feed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import text

from mnemo.client import MnemoClient
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import governance_pb2_grpc, sync_pb2_grpc
from mnemo.v1 import sync_pb2 as sy
from mnemo_server.store.transactions.database import create_sync_engine
from tests.api.changes import PARENT, USER, WAIT_S, Event, Watch, cursors, write
from tests.support.change_feed import prune_all_changes
from tests.support.databases import PostgresDatabases
from tests.support.rpc_errors import rpc_failure
from tests.support.server import ServerThread, running_server, server_settings
from tests.support.tokens import SigningKeys, bearer


@pytest.fixture
def mnemo(server: str) -> Iterator[MnemoClient]:
    with MnemoClient(server) as client:
        yield client


# ------------------------------------------------------------- ListChanges


def test_list_changes_pages_oldest_first_with_the_feed_bounds(mnemo: MnemoClient) -> None:
    mnemo.create_conversation(USER, "chat")
    written = write(mnemo, 4)
    listed: list[sy.Change] = []
    after = 0
    while True:
        page = mnemo.list_changes(USER, after_cursor=after, page_size=2)
        assert len(page.changes) <= 2
        assert (page.latest_cursor, page.oldest_cursor) == (written[-1], 1)
        listed += page.changes
        if page.next_cursor == after:
            break
        after = page.next_cursor
    assert cursors(listed) == list(range(1, written[-1] + 1))
    assert set(written) <= set(cursors(listed))
    assert listed[0].resource_name == f"{PARENT}/conversations/chat"
    assert listed[0].operation == sy.CHANGE_OPERATION_UPSERT
    messages = [c.message for c in listed if c.WhichOneof("state") == "message"]
    assert [json.loads(m.message_json)["content"] for m in messages] == ["c0", "c1", "c2", "c3"]
    # Caught up: nothing more (a cursor beyond it is CURSOR_AHEAD: test_cursor_range.py).
    caught_up = mnemo.list_changes(USER, after_cursor=written[-1])
    assert (list(caught_up.changes), caught_up.next_cursor) == ([], written[-1])


def test_a_user_without_changes_has_an_empty_feed(mnemo: MnemoClient) -> None:
    page = mnemo.list_changes("nobody")
    assert (list(page.changes), page.next_cursor, page.latest_cursor, page.oldest_cursor) == (
        [],
        0,
        0,
        1,
    )


def test_list_changes_refuses_bad_arguments(channel: grpc.Channel) -> None:
    stub = sync_pb2_grpc.SyncServiceStub(channel)
    for request, reason, field in (
        (sy.ListChangesRequest(parent="users/a/b"), "INVALID_NAME", "parent"),
        (sy.ListChangesRequest(parent=PARENT, after_cursor=-1), "INVALID_FIELD", "after_cursor"),
        (sy.ListChangesRequest(parent=PARENT, page_size=-1), "INVALID_FIELD", "page_size"),
    ):
        failure = rpc_failure(stub.ListChanges, request, timeout=10)
        assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
        assert (failure.reason, failure.fields) == (reason, (field,))
    watch = rpc_failure(
        lambda: list(
            stub.WatchChanges(sy.WatchChangesRequest(parent="x", after_cursor=-1), timeout=10)
        )
    )
    assert (watch.code, watch.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")


# ------------------------------------------------------------ WatchChanges


def test_watch_sends_the_backlog_then_a_heartbeat_then_live_changes(
    server: str, mnemo: MnemoClient
) -> None:
    mnemo.create_conversation(USER, "chat")
    backlog = write(mnemo, 3)
    watch = Watch(server, after_cursor=1)
    try:
        assert cursors(watch.changes_until_heartbeat()) == list(range(2, backlog[-1] + 1))
        live = write(mnemo, 2, prefix="live")
        received = watch.changes_until(live[-1])
        assert cursors(received) == list(range(backlog[-1] + 1, live[-1] + 1))
        contents = [
            json.loads(c.message.message_json)["content"]
            for c in received
            if c.WhichOneof("state") == "message"
        ]
        assert contents == ["live0", "live1"]
    finally:
        watch.close()


def test_watches_resumed_from_the_last_cursor_miss_nothing_and_repeat_nothing(
    server: str, mnemo: MnemoClient
) -> None:
    mnemo.create_conversation(USER, "chat")
    written: list[int] = []
    writer = threading.Thread(target=lambda: written.extend(write(mnemo, 30)))
    received: list[int] = []
    watch = Watch(server)
    writer.start()
    try:
        # Reconnect after every third change, while the writer keeps writing.
        while writer.is_alive() or not received or received[-1] < written[-1]:
            event = watch.next_event()
            if event.HasField("change"):
                received.append(event.change.cursor)
                if len(received) % 3 == 0:
                    watch.close()
                    watch = Watch(server, after_cursor=received[-1])
    finally:
        writer.join(WAIT_S)
        watch.close()
    assert len(written) == 30
    assert received == list(range(1, written[-1] + 1))


def test_idle_watches_send_heartbeats_with_the_latest_cursor(database_url: str) -> None:
    with (
        running_server(database_url, watch_heartbeat_seconds=0.1) as target,
        MnemoClient(target) as client,
    ):
        client.create_conversation(USER, "chat")
        latest = write(client, 2)[-1]
        watch = Watch(target, after_cursor=latest)
        try:
            beats = [watch.next_event() for _ in range(4)]
        finally:
            watch.close()
    assert all(beat.WhichOneof("event") == "heartbeat" for beat in beats)
    assert {beat.heartbeat.cursor for beat in beats} == {latest}
    times = [beat.heartbeat.time.ToDatetime() for beat in beats]
    assert times == sorted(times) and times[0] < times[-1]


def test_a_cursor_older_than_the_retained_history_is_out_of_range(
    server: str, mnemo: MnemoClient, database_url: str
) -> None:
    mnemo.create_conversation(USER, "chat")
    write(mnemo, 4)
    prune_all_changes(database_url)
    latest = write(mnemo, 1)[-1]
    stub = sync_pb2_grpc.SyncServiceStub(grpc.insecure_channel(server))
    oldest = mnemo.list_changes(USER).oldest_cursor
    assert oldest > 2
    listed = rpc_failure(
        stub.ListChanges, sy.ListChangesRequest(parent=PARENT, after_cursor=1), timeout=10
    )
    watched = rpc_failure(
        lambda: list(
            stub.WatchChanges(sy.WatchChangesRequest(parent=PARENT, after_cursor=1), timeout=10)
        )
    )
    for failure in (listed, watched):
        assert (failure.code, failure.reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED")
        assert failure.metadata["oldest_cursor"] == str(oldest)
    # The cursor just before the oldest retained one still works.
    assert cursors(list(mnemo.list_changes(USER, after_cursor=oldest - 1).changes))[-1] == latest


def _big_message(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"{i}:" + "x" * 200_000}


def test_a_consumer_that_stops_reading_is_told_to_resume(database_url: str) -> None:
    """Real flow control: the watch fills the transport's buffers, its next
    send times out, and it ends with WATCH_LAGGING; the consumer reads what
    was buffered, then resumes from its last cursor. The stalled consumer's
    channel does not probe the bandwidth-delay product: with probing its
    receive window grew to hold 14 of the 50 changes of 200 kB here (3
    without) and can grow further on a busy machine; once every change fits,
    the watch never lags (the likely cause of the one failure seen, in a
    clean-clone make test: the stalled watch never ended)."""
    settings = server_settings(database_url, watch_send_timeout_seconds=0.3, watch_max_watchers=1)
    thread = ServerThread(settings)
    target = thread.start()
    try:
        with MnemoClient(target, timeout=60) as client:
            client.create_conversation(USER, "chat")
            for batch in range(5):  # 50 changes of 200 kB: more than the buffers hold
                client.append_messages(
                    USER, "chat", [_big_message(batch * 10 + i) for i in range(10)]
                )
            latest = client.list_changes(USER, page_size=1).latest_cursor
            channel = grpc.insecure_channel(target, options=[("grpc.http2.bdp_probe", 0)])
            stub = sync_pb2_grpc.SyncServiceStub(channel)
            stalled = stub.WatchChanges(sy.WatchChangesRequest(parent=PARENT), timeout=120)
            first = next(stalled)
            _wait_until_the_watch_slot_is_free(stub)
            received = [first.change.cursor]
            failure = rpc_failure(
                lambda: received.extend(e.change.cursor for e in stalled if e.HasField("change"))
            )
            assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "WATCH_LAGGING")
            assert 1 <= int(failure.metadata["resume_cursor"]) <= received[-1] < latest
            resumed = _watch_once_free(target, after_cursor=received[-1])
            try:
                rest = cursors(resumed.changes_until_heartbeat())
            finally:
                resumed.close()
            assert received + rest == list(range(1, latest + 1))
            channel.close()
    finally:
        thread.stop(grace=5)


def _wait_until_the_watch_slot_is_free(stub: sync_pb2_grpc.SyncServiceStub) -> None:
    """With one watch allowed, a second one is refused until the first ends."""
    for _ in range(int(WAIT_S / 0.1)):
        probe = stub.WatchChanges(sy.WatchChangesRequest(parent="users/probe"), timeout=10)
        try:
            next(probe)
            return
        except grpc.RpcError as error:
            assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            threading.Event().wait(0.1)
        finally:
            probe.cancel()
    raise AssertionError("the stalled watch never ended")


def _watch_once_free(target: str, after_cursor: int) -> Watch:
    """A watch, once the server has room for it (a cancelled watch frees its
    slot a moment after the cancel)."""
    for _ in range(int(WAIT_S / 0.1)):
        watch = Watch(target, after_cursor=after_cursor)
        first = watch.next()
        if isinstance(first, Event):
            watch.held.append(first)
            return watch
        watch.close()
        assert isinstance(first, grpc.RpcError)
        assert first.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        threading.Event().wait(0.1)
    raise AssertionError("no room for a watch")


def test_a_server_runs_at_most_max_watchers_watches(database_url: str) -> None:
    with running_server(database_url, watch_max_watchers=2) as target:
        watches = [Watch(target), Watch(target)]
        try:
            for watch in watches:
                assert watch.next_event().HasField("heartbeat")
            third = Watch(target)
            failure = third.next()
            third.close()
            assert isinstance(failure, grpc.RpcError)
            assert failure.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            watches[0].close()
            watches[0] = _watch_once_free(target, after_cursor=0)
        finally:
            for watch in watches:
                watch.close()


def test_shutdown_ends_watches_cleanly_and_they_resume_from_their_cursor(
    database_url: str,
) -> None:
    thread = ServerThread(server_settings(database_url))
    target = thread.start()
    with MnemoClient(target) as client:
        client.create_conversation(USER, "chat")
        before = write(client, 2)
    watch = Watch(target)
    received = cursors(watch.changes_until_heartbeat())
    thread.stop(grace=10)
    assert watch.next() is None  # the stream ended with OK
    watch.close()
    with running_server(database_url) as again, MnemoClient(again) as client:
        after = write(client, 2, prefix="after")
        resumed = Watch(again, after_cursor=received[-1])
        try:
            assert cursors(resumed.changes_until_heartbeat()) == list(
                range(before[-1] + 1, after[-1] + 1)
            )
        finally:
            resumed.close()
    assert received == list(range(1, before[-1] + 1))


def test_erasure_reaches_watchers_as_one_erase_change(server: str, mnemo: MnemoClient) -> None:
    mnemo.create_conversation(USER, "chat")
    old = write(mnemo, 2)
    watch = Watch(server, after_cursor=old[-1])
    try:
        assert watch.changes_until_heartbeat() == []
        governance = governance_pb2_grpc.GovernanceServiceStub(grpc.insecure_channel(server))
        governance.DeleteUserData(gv.DeleteUserDataRequest(parent=PARENT), timeout=30)
        erase = watch.next_event().change
        assert (erase.operation, erase.resource_name) == (sy.CHANGE_OPERATION_ERASE, PARENT)
        assert erase.cursor > old[-1]
    finally:
        watch.close()
    # A cursor from before the erasure resumes at it.
    assert cursors(list(mnemo.list_changes(USER, after_cursor=1).changes)) == [erase.cursor]


# -------------------------------------------------------------- isolation


def test_another_users_feed_is_not_found(database_url: str, tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    with running_server(database_url, **keys.server_settings(tmp_path)) as target:
        owner = bearer(keys.token(USER))
        with MnemoClient(target, token=keys.token(USER)) as client:
            client.create_conversation(USER, "chat")
        stranger = bearer(keys.token("u2"))
        stub = sync_pb2_grpc.SyncServiceStub(grpc.insecure_channel(target))
        listed = rpc_failure(
            stub.ListChanges, sy.ListChangesRequest(parent=PARENT), metadata=stranger, timeout=10
        )
        watched = rpc_failure(
            lambda: list(
                stub.WatchChanges(
                    sy.WatchChangesRequest(parent=PARENT), metadata=stranger, timeout=10
                )
            )
        )
        for failure in (listed, watched):
            assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
            assert "chat" not in failure.message
        own = stub.ListChanges(sy.ListChangesRequest(parent=PARENT), metadata=owner, timeout=10)
        assert len(own.changes) == 1


# --------------------------------------------------------------- notifier


@pytest.mark.postgres
def test_the_listen_connection_comes_back_after_it_drops(
    postgres_databases: PostgresDatabases,
) -> None:
    """Heartbeats (and so the watch's own re-reads) are far apart: the change
    arrives only if the LISTEN connection was re-established (its return
    wakes every watch, covering a notice lost meanwhile)."""
    url = postgres_databases.fresh()
    engine = create_sync_engine(url)
    try:
        with (
            running_server(url, watch_heartbeat_seconds=600) as target,
            MnemoClient(target) as client,
        ):
            client.create_conversation(USER, "chat")
            watch = Watch(target)
            try:
                assert cursors(watch.changes_until_heartbeat()) == [1]
                with engine.begin() as conn:
                    ended = conn.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = 'mnemo-listen' "
                            "AND datname = current_database()"
                        )
                    ).all()
                assert len(ended) == 1
                cursor = write(client, 1)[-1]
                assert cursors(watch.changes_until(cursor)) == list(range(2, cursor + 1))
            finally:
                watch.close()
    finally:
        engine.dispose()
        postgres_databases.drop(url)
