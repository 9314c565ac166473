"""The subprocess harness itself: start, crash, restart on the same port, clean stop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.subprocess_server import subprocess_server


def _serving(target: str) -> bool:
    with grpc.insecure_channel(target) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=10
        )
    serving: bool = response.status == health_pb2.HealthCheckResponse.SERVING
    return serving


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the store plays no part
def test_kill_restart_and_stop(database_url: str, tmp_path: Path) -> None:
    with subprocess_server(database_url, log_dir=tmp_path) as server:
        target, first_pid = server.target, server.pid
        assert _serving(target)
        server.kill()
        assert not server.is_running()
        assert server.returncode == -9
        assert server.restart() == target  # the port was still free
        assert server.pid != first_pid
        assert _serving(target)
        assert server.stop() == 0
        assert "stopped" in server.log_text()
    assert sorted(path.name for path in tmp_path.glob("*.log")) == [
        "mnemo-serve-1.log",
        "mnemo-serve-2.log",
    ]


@pytest.mark.sqlite
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_second_server_on_a_taken_port_exits_2(database_url: str, tmp_path: Path) -> None:
    """Never two servers on one port (gRPC would share it with SO_REUSEPORT and
    split the connections between them): restarts on the same port are safe."""
    with subprocess_server(database_url, log_dir=tmp_path) as server:
        second = subprocess.run(
            [sys.executable, "-m", "mnemo_server", "serve", "--listen", server.target],
            env={**os.environ, "MNEMO_DATA_DIR": str(tmp_path / "other")},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 2, second.stderr
        assert f"cannot listen on {server.target}" in second.stderr
        assert _serving(server.target)
