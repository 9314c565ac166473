"""The image's ``HEALTHCHECK`` asks the port ``MNEMO_LISTEN`` names (issue 36,
item 4): its command, read from ``deploy/Dockerfile`` as Docker reads it, run
here with the image's environment but ``MNEMO_LISTEN``, against a real
``mnemo serve`` on a loopback port. ``make test-image`` runs it inside the
image too (``podman healthcheck run`` of a container on another port)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.dockerfile import final_stage
from tests.support.subprocess_server import subprocess_server

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def _healthcheck(listen: str) -> subprocess.CompletedProcess[str]:
    """The image's health check command with the image's environment (its
    paths made this venv's), ``MNEMO_LISTEN`` set to ``listen``."""
    stage = final_stage(ROOT / "deploy" / "Dockerfile")
    env = {name: value for name, value in os.environ.items() if not name.startswith("MNEMO_")}
    env.update(stage.env)
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env["MNEMO_LISTEN"] = listen
    return subprocess.run(
        stage.healthcheck, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_the_healthcheck_asks_the_port_mnemo_listen_names(tmp_path: Path, host: str) -> None:
    # The server listens on loopback only; "0.0.0.0" is what the health check is
    # told (the image's own wildcard), which it must ask on loopback.
    with subprocess_server(f"sqlite:///{tmp_path / 'mnemo.db'}", log_dir=tmp_path) as server:
        assert server.port != 50051
        checked = _healthcheck(f"{host}:{server.port}")
        assert (checked.returncode, checked.stdout.strip()) == (0, "SERVING"), checked.stderr


def test_the_healthcheck_fails_where_nothing_listens() -> None:
    port = _unused_port()
    checked = _healthcheck(f"0.0.0.0:{port}")
    assert checked.returncode == 1
    assert f"127.0.0.1:{port}" in checked.stderr
