"""SIGTERM in the middle of a write load, on both backends: health turns
NOT_SERVING first, the calls in flight finish, a change watcher's stream
ends with OK, the process exits 0, and after a restart every acknowledged
write is there exactly once (writes the stopping server refused are retried
under their request_id) and the watcher resumes from its last cursor
without a gap or a duplicate."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import sync_pb2 as sy
from tests.api.changes import Watch
from tests.concurrency.load import feed_cursors, write_load
from tests.support.subprocess_server import subprocess_server

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
GRACE_S = 20
WAIT_S = 60


class HealthWatcher(threading.Thread):
    """Records every overall health status until the stream ends."""

    def __init__(self, target: str) -> None:
        super().__init__(daemon=True)
        self.target = target
        self.statuses: list[int] = []
        self.code: grpc.StatusCode | None = None
        self.watching = threading.Event()

    def run(self) -> None:
        with grpc.insecure_channel(self.target) as channel:
            call = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(), timeout=WAIT_S * 2
            )
            try:
                for response in call:
                    self.statuses.append(response.status)
                    self.watching.set()
            except grpc.RpcError:
                pass
            self.code = call.code()


def _until_end(watch: Watch) -> list[int]:
    """The cursors of the changes until the stream ends; fails unless it ends OK."""
    cursors = []
    while (item := watch.next()) is not None:
        assert isinstance(item, sy.WatchChangesResponse), f"the watch failed: {item!r}"
        if item.HasField("change"):
            cursors.append(item.change.cursor)
    return cursors


@pytest.mark.timeout(300)
def test_sigterm_under_load_finishes_in_flight_calls_and_loses_nothing(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with subprocess_server(
        database_url, "--grace-period-seconds", str(GRACE_S), log_dir=tmp_path
    ) as server:
        health = HealthWatcher(server.target)
        health.start()
        assert health.watching.wait(WAIT_S)
        watch = Watch(server.target)
        with write_load(lambda: server.target, appenders=6) as load:
            load.wait_for_more(30)
            in_flight = load.in_flight()
            signalled = time.monotonic()
            server.terminate()
            assert server.wait(GRACE_S + WAIT_S) == 0, server.log_tail()
            exited = time.monotonic()
            health.join(WAIT_S)
            # NOT_SERVING came before the end; the watch ended cleanly with the server.
            assert (health.statuses, health.code) == ([SERVING, NOT_SERVING], grpc.StatusCode.OK)
            watched = _until_end(watch)
            watch.close()
            finished_after_signal = sum(
                1
                for client in load.clients
                for done in client.completions
                if signalled < done < exited
            )
            # Calls the stopping server refused are retried by the clients; none
            # was cut off half way: no retry found its write already committed.
            assert load.failures() == []
            assert load.replayed() == 0

            server.restart()
            load.wait_for_more(10)
            load.finish()
            load.check(server.target)
        with grpc.insecure_channel(server.target) as channel:
            every = feed_cursors(channel)
        resumed = Watch(server.target, after_cursor=watched[-1])
        try:
            rest = [change.cursor for change in resumed.changes_until(every[-1])]
        finally:
            resumed.close()
        assert watched + rest == every
        assert server.stop() == 0
    with capsys.disabled():
        print(
            f"\nSIGTERM under load: {in_flight} calls in flight at the signal, "
            f"{finished_after_signal} acknowledged between it and the exit, "
            f"the watch saw {len(watched)} changes before the end and resumed for {len(rest)}, "
            f"{load.acknowledged()} writes in all, retried {dict(load.failed_attempts())}"
        )
