"""``deploy/systemd/mnemo.service`` starts when installed as
docs/deployment.md says (issue 36, items 1 and 5): no systemd runs here, so its
``[Service]`` lines are carried out as systemd would — ``Environment=`` lines,
then the ``EnvironmentFile=`` (``deploy/systemd/mnemo.env``, which the
documented steps install as ``/etc/mnemo/mnemo.env``) over them, the
``LoadCredential=`` secret in a credentials directory (``%d``), the
``WorkingDirectory=`` — and its ``ExecStartPre=`` and ``ExecStart=`` command
lines run against a real SQLite database in a scratch state directory; the
server answers on both ports of the environment file (made loopback ports
here) and ``KillSignal=`` ends it with exit code 0 within ``TimeoutStopSec=``.
``test_deploy_files.py`` has ``systemd-analyze verify`` check the unit's
syntax.
"""

from __future__ import annotations

import http.client
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "mnemo.service"
ENV_FILE = ROOT / "deploy" / "systemd" / "mnemo.env"
DOCS = ROOT / "docs" / "deployment.md"
STEP_TIMEOUT_S = 120
SERVE_TIMEOUT_S = 60.0


@dataclass
class Service:
    """The ``[Service]`` section: each key's values in order."""

    lines: dict[str, list[str]] = field(default_factory=dict)

    def one(self, key: str) -> str:
        (value,) = self.lines[key]
        return value

    def all(self, key: str) -> list[str]:
        return self.lines.get(key, [])


def _service(text: str) -> Service:
    service, section = Service(), ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            service.lines.setdefault(key, []).append(value)
    return service


def _environment_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines as systemd reads an ``EnvironmentFile=``."""
    found = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            found[key.strip()] = " ".join(shlex.split(value))
    return found


def _loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Installed:
    """The documented installation, in a scratch directory."""

    service: Service
    env: dict[str, str]
    cwd: Path
    ports: dict[str, int]

    def command(self, key: str) -> list[str]:
        line = self.service.one(key).lstrip("-+!@:")
        mnemo = Path(sys.executable).parent / "mnemo"
        return [str(mnemo) if part == "/opt/mnemo/bin/mnemo" else part for part in line.split()]


def _installed(tmp_path: Path) -> Installed:
    service = _service(UNIT.read_text())
    state = tmp_path / "var-lib-mnemo"
    credentials = tmp_path / "credentials"
    state.mkdir()
    credentials.mkdir()
    # /etc/mnemo/jwt-secret, as the documented `openssl rand -base64 48` makes it.
    for entry in service.all("LoadCredential"):
        name, _, source = entry.partition(":")
        assert source == "/etc/mnemo/jwt-secret", entry
        (credentials / name).write_text(secrets.token_urlsafe(48))
    state_dir = f"/var/lib/{service.one('StateDirectory')}"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for line in service.all("Environment"):
        for assignment in shlex.split(line):
            name, _, value = assignment.partition("=")
            env[name] = value.replace("%d", str(credentials)).replace(state_dir, str(state))
    (env_file,) = service.all("EnvironmentFile")
    assert env_file.lstrip("-") == "/etc/mnemo/mnemo.env"
    ports = {}
    for name, value in _environment_file(ENV_FILE.read_text()).items():
        if name in ("MNEMO_LISTEN", "MNEMO_WEB_LISTEN"):
            ports[name] = _loopback_port()
            value = f"127.0.0.1:{ports[name]}"  # 0.0.0.0 in the file: loopback here
        env[name] = value
    cwd = Path(service.one("WorkingDirectory").replace(state_dir, str(state)))
    return Installed(service, env, cwd, ports)


@contextmanager
def _serving(installed: Installed, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            installed.command("ExecStart"),
            cwd=installed.cwd,
            env=installed.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(STEP_TIMEOUT_S)


def _health(port: int) -> str:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while True:
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=5, wait_for_ready=True
                )
            return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _console_status(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/console/")
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_unit_starts_with_the_documented_files_and_drains_on_its_kill_signal(
    tmp_path: Path,
) -> None:
    installed = _installed(tmp_path)
    assert set(installed.ports) == {"MNEMO_LISTEN", "MNEMO_WEB_LISTEN"}
    migrated = subprocess.run(
        installed.command("ExecStartPre"),
        cwd=installed.cwd,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    assert migrated.returncode == 0, migrated.stderr
    log = tmp_path / "serve.log"
    with _serving(installed, log) as server:
        assert _health(installed.ports["MNEMO_LISTEN"]) == "SERVING", log.read_text()
        assert _console_status(installed.ports["MNEMO_WEB_LISTEN"]) == 200
        assert (tmp_path / "var-lib-mnemo" / "mnemo.db").is_file()
        server.send_signal(getattr(signal, installed.service.one("KillSignal")))
        stop_s = float(installed.service.one("TimeoutStopSec"))
        assert server.wait(stop_s) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_the_documented_steps_install_what_the_unit_reads() -> None:
    text = DOCS.read_text()
    section = text[text.index("\n## systemd") :]
    section = section[: section.index("\n## ", 1)]
    steps = "\n".join(re.findall(r"```sh\n(.*?)```", section, re.DOTALL))
    assert "deploy/systemd/mnemo.env /etc/mnemo/mnemo.env" in steps
    assert "/etc/mnemo/jwt-secret" in steps
    assert "deploy/systemd/mnemo.service /etc/systemd/system/mnemo.service" in steps
    # Every wheel mnemo-server needs: the model's is on no index.
    for wheel in ("mnemo_server-", "mnemo_client-", "mnemo_model_bge_small_en_v1_5-"):
        assert wheel in steps, wheel
