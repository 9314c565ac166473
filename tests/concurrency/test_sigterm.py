"""SIGTERM in the middle of a write load, on both backends: health turns
NOT_SERVING first, the calls in flight finish, the process exits 0, and
after a restart every acknowledged write is there exactly once (writes the
stopping server refused are retried under their request_id)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.concurrency.load import write_load
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
        with write_load(server.target, appenders=6) as load:
            load.wait_for_more(30)
            in_flight = load.in_flight()
            signalled = time.monotonic()
            server.terminate()
            assert server.wait(GRACE_S + WAIT_S) == 0, server.log_tail()
            health.join(WAIT_S)
            # NOT_SERVING came before the end; the watch ended cleanly with the server.
            assert (health.statuses, health.code) == ([SERVING, NOT_SERVING], grpc.StatusCode.OK)
            finished_after_signal = sum(
                1 for client in load.clients for done in client.completions if done > signalled
            )
            # Calls the stopping server refused are retried by the clients; none
            # was cut off half way: no retry found its write already committed.
            assert load.failures() == []
            assert load.replayed() == 0

            server.restart()
            load.wait_for_more(10)
            load.finish()
            load.check(server.target)
        assert server.stop() == 0
    with capsys.disabled():
        print(
            f"\nSIGTERM under load: {in_flight} calls in flight at the signal, "
            f"{finished_after_signal} acknowledged after it, "
            f"{load.acknowledged()} writes in all, retried {dict(load.failed_attempts())}"
        )
