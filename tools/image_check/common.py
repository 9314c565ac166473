"""What the checks share: podman run with this machine's settings and bounded
in time, the record of what they started (removed by ``Podman.clean_up``),
loopback ports, waiting, tokens and gRPC health."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import grpc
import jwt
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = Path(__file__).with_name("containers.conf")
STEP_TIMEOUT_S = 600.0
# podman's complaints about what this machine lacks (systemd for health check
# timers, syslog), printed on every run and never about the check.
_NOISE = ("unable to get systemd connection", "Removing timer for container", "syslog")

T = TypeVar("T")


class CheckFailed(Exception):
    """A check found the image or a deployment not doing what it should."""


def say(text: str) -> None:
    print(f"test-image: {text}", flush=True)


def quiet(text: str) -> str:
    """``text`` without podman's lines about what this machine lacks."""
    return "\n".join(line for line in text.splitlines() if not any(n in line for n in _NOISE))


class Podman:
    """``podman`` with ``CONTAINERS_CONF``, and what it was asked to start."""

    def __init__(self) -> None:
        self.env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
        self._containers: list[str] = []
        self._pods: list[str] = []
        self._volumes: list[str] = []
        self._networks: list[str] = []
        self._secrets: list[str] = []
        self._compose_projects: list[str] = []

    def run(
        self,
        *args: str,
        timeout: float = STEP_TIMEOUT_S,
        check: bool = True,
        stdin: bytes | None = None,
        program: Sequence[str] = ("podman",),
        cwd: Path = ROOT,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``podman ARGS`` (or ``program ARGS``); ``CheckFailed`` when it
        fails and ``check`` is set."""
        command = [*program, *args]
        try:
            done = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                timeout=timeout,
                check=False,
                cwd=cwd,
                env={**self.env, **(env or {})},
            )
        except subprocess.TimeoutExpired as expired:
            raise CheckFailed(f"{' '.join(command)} took more than {timeout:g}s") from expired
        result = subprocess.CompletedProcess(
            command,
            done.returncode,
            done.stdout.decode(errors="replace"),
            quiet(done.stderr.decode(errors="replace")),
        )
        if check and result.returncode != 0:
            raise CheckFailed(
                f"{' '.join(command)} exited {result.returncode}:\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return result

    def output(self, *args: str, timeout: float = STEP_TIMEOUT_S) -> str:
        return self.run(*args, timeout=timeout).stdout.strip()

    def exists(self, kind: str, name: str) -> bool:
        """Whether the image, container, pod, volume or network ``name`` exists."""
        return self.run(kind, "exists", name, check=False, timeout=60).returncode == 0

    def secret_exists(self, name: str) -> bool:
        return self.run("secret", "inspect", name, check=False, timeout=60).returncode == 0

    # What was started, to be removed at the end.
    def started_container(self, name: str) -> None:
        self._containers.append(name)

    def started_pod(self, name: str) -> None:
        self._pods.append(name)

    def created_volume(self, name: str) -> None:
        self._volumes.append(name)

    def created_network(self, name: str) -> None:
        self._networks.append(name)

    def created_secret(self, name: str) -> None:
        self._secrets.append(name)

    def started_compose_project(self, name: str) -> None:
        self._compose_projects.append(name)

    def logs(self, container: str) -> str:
        done = self.run("logs", container, check=False, timeout=60)
        return done.stdout + done.stderr

    def remove_container(self, name: str) -> None:
        """Remove the container and the volumes only it used (its anonymous ones)."""
        if not self.exists("container", name):
            return
        self.run("rm", "--force", "--volumes", "--time", "10", name, check=False, timeout=120)

    def anonymous_volumes(self, pod: str) -> list[str]:
        """The anonymous volumes of the pod's containers."""
        found = self.run("ps", "--all", "--filter", f"pod={pod}", "--format", "{{.Names}}")
        volumes = []
        for container in found.stdout.split():
            mounts = self.run(
                "inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", container
            ).stdout.split()
            volumes += [v for v in mounts if self.volume_is_anonymous(v)]
        return volumes

    def volume_is_anonymous(self, name: str) -> bool:
        done = self.run("volume", "inspect", "--format", "{{.Anonymous}}", name, check=False)
        return done.stdout.strip() == "true"

    def remove_pod(self, name: str) -> None:
        """Remove the pod, its containers and their anonymous volumes."""
        if not self.exists("pod", name):
            return
        found = self.run(
            "ps", "--all", "--filter", f"pod={name}", "--format", "{{.Names}} {{.IsInfra}}",
            check=False,
        )  # fmt: skip
        volumes = self.anonymous_volumes(name)
        for line in found.stdout.splitlines():
            container, infra = line.split()
            if infra != "true":
                self.remove_container(container)
        self.run("pod", "rm", "--force", "--time", "10", name, check=False, timeout=120)
        for volume in volumes:
            if self.exists("volume", volume):
                self.run("volume", "rm", volume, check=False, timeout=60)

    def clean_up(self) -> None:
        """Remove all that was started, newest first; whatever remains is said."""
        for project in reversed(self._compose_projects):
            found = self.run(
                "ps",
                "--all",
                "--quiet",
                "--filter",
                f"label=io.podman.compose.project={project}",
                check=False,
            )
            for container in found.stdout.split():
                self.remove_container(container)
        for container in reversed(self._containers):
            self.remove_container(container)
        for pod in reversed(self._pods):
            self.remove_pod(pod)
        for volume in reversed(self._volumes):
            if self.exists("volume", volume):
                self.run("volume", "rm", volume, check=False, timeout=60)
        for network in reversed(self._networks):
            if self.exists("network", network):
                self.run("network", "rm", "--force", network, check=False, timeout=60)
        for secret in reversed(self._secrets):
            if self.secret_exists(secret):
                self.run("secret", "rm", secret, check=False, timeout=60)
        left = [c for c in self._containers if self.exists("container", c)]
        left += [p for p in self._pods if self.exists("pod", p)]
        left += [v for v in self._volumes if self.exists("volume", v)]
        left += [n for n in self._networks if self.exists("network", n)]
        if left:
            say(f"could not remove: {', '.join(left)}")


def loopback_port() -> int:
    """A port of 127.0.0.1 free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float) -> T:
    """``probe()``'s first result that is not ``None``, asked twice a second;
    ``CheckFailed`` naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise CheckFailed(f"{what}: not within {timeout_s:g}s")
        time.sleep(0.5)


def token(secret: str, user: str) -> str:
    """An HS256 token for ``user`` as the deployments verify them (aud "mnemo")."""
    now = int(time.time())
    claims = {"sub": user, "aud": "mnemo", "iat": now, "exp": now + 900}
    return jwt.encode(claims, secret, algorithm="HS256")


def health(target: str) -> str | None:
    """The gRPC health status of the server at ``target``; ``None`` when it
    cannot be asked."""
    try:
        with grpc.insecure_channel(target) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
    except grpc.RpcError:
        return None
    status: str = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return status


def serving(target: str) -> bool | None:
    """``True`` once the server at ``target`` is SERVING (for ``wait_for``)."""
    return True if health(target) == "SERVING" else None
