"""``deploy/compose.yaml`` with podman-compose (issue 36, item 5): the header's
steps (the secret made readable by uid 10001), PostgreSQL (the stand-in), two
replicas that migrate then serve, nginx in front; gRPC and the web port
(the console, a Connect call) through nginx; one replica stopped, calls still
answered; restarted, its new address found while the other is stopped;
SIGTERM drains both to exit code 0.

The file runs as it is, but for where it is and what it publishes: a copy in
a scratch directory whose relative paths are made absolute and whose ports
are published on 127.0.0.1 ports only (``runnable``)."""

from __future__ import annotations

import http.client
import json
import os
import secrets
from pathlib import Path

from mnemo.client import MnemoClient
from tools.image_check.common import (
    ROOT,
    CheckFailed,
    Podman,
    loopback_port,
    say,
    serving,
    token,
    wait_for,
)

COMPOSE = ROOT / "deploy" / "compose.yaml"
UP_TIMEOUT_S = 600.0
SERVE_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 40
# What a browser on the documented port mapping (8080:8080) sends.
WEB_HOST = "localhost:8080"


def runnable(text: str, grpc_port: int, web_port: int, secret_file: Path) -> str:
    """``compose.yaml`` runnable from a scratch directory, on loopback ports."""
    changes = {
        '"50051:50051"': f'"127.0.0.1:{grpc_port}:50051"',
        '"8080:8080"': f'"127.0.0.1:{web_port}:8080"',
        "./nginx/mnemo.conf": str(ROOT / "deploy" / "nginx" / "mnemo.conf"),
        "file: ./secrets/jwt-secret": f"file: {secret_file}",
        "context: ..": f"context: {ROOT}",
    }
    for old, new in changes.items():
        if text.count(old) != 1:
            raise CheckFailed(f"{COMPOSE} no longer has {old} once")
        text = text.replace(old, new)
    return text


class Project:
    """One podman-compose project of the copy."""

    def __init__(self, podman: Podman, name: str, file: Path, password: str) -> None:
        self.podman, self.name, self.file = podman, name, file
        self.env = {"POSTGRES_PASSWORD": password}

    def compose(self, *args: str, timeout: float = UP_TIMEOUT_S) -> str:
        return self.podman.run(
            "-p", self.name, "-f", str(self.file), *args,
            program=("podman-compose",), cwd=self.file.parent, env=self.env, timeout=timeout,
        ).stdout  # fmt: skip

    def container(self, service: str, number: int = 1) -> str:
        return f"{self.name}_{service}_{number}"

    def address(self, container: str) -> str:
        return self.podman.output(
            "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            container,
        )  # fmt: skip


def _web(port: int, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Host": WEB_HOST, **headers})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _check_web(port: int, bearer: str) -> None:
    status, page = _web(port, "GET", "/console/")
    if status != 200 or b"<html" not in page.lower():
        raise CheckFailed(f"the console through nginx: {status} {page[:200]!r}")
    request = json.dumps({"parent": "users/ada", "memory": {"text": "Ada lives in Lyon."}})
    status, reply = _web(
        port,
        "POST",
        "/mnemo.v1.MemoryService/CreateMemory",
        request.encode(),
        **{
            "Content-Type": "application/json",
            "Connect-Protocol-Version": "1",
            "Authorization": f"Bearer {bearer}",
        },
    )
    if status != 200 or json.loads(reply)["memory"]["text"] != "Ada lives in Lyon.":
        raise CheckFailed(f"a Connect call through nginx: {status} {reply[:300]!r}")


def _answered(target: str, bearer: str) -> list[str]:
    with MnemoClient(target, token=bearer) as mnemo:
        return [memory.text for memory in mnemo.list_memories("ada")]


def check_compose(podman: Podman, scratch: Path) -> None:
    # The header's steps: a random secret, readable by the image's uid 10001.
    secret_file = scratch / "jwt-secret"
    secret = secrets.token_urlsafe(48)
    secret_file.write_text(secret)
    secret_file.chmod(0o644)
    grpc_port, web_port = loopback_port(), loopback_port()
    copy = scratch / "compose" / "compose.yaml"
    copy.parent.mkdir()
    copy.write_text(runnable(COMPOSE.read_text(), grpc_port, web_port, secret_file))
    project = Project(podman, f"mnemo-check-{os.getpid()}", copy, secrets.token_hex(24))
    podman.started_compose_project(project.name)
    podman.created_volume(f"{project.name}_postgres-data")
    podman.created_network(f"{project.name}_default")
    project.compose("up", "-d")

    target = f"127.0.0.1:{grpc_port}"
    wait_for(f"gRPC through nginx on {target}", lambda: serving(target), SERVE_TIMEOUT_S)
    replicas = [project.container("mnemo", n) for n in (1, 2)]
    for replica in replicas:

        def started(replica: str = replica) -> bool | None:
            return "serving on" in podman.logs(replica) or None

        wait_for(f"{replica} serving", started, 60)
    bearer = token(secret, "ada")
    _check_web(web_port, bearer)
    if _answered(target, bearer) != ["Ada lives in Lyon."]:
        raise CheckFailed("gRPC through nginx does not see what the web port wrote")
    say("compose: 2 replicas serve gRPC and the web port (console, Connect) through nginx")

    first, second = replicas
    before = project.address(first)
    podman.run("stop", "--time", str(STOP_TIMEOUT_S), first, timeout=STOP_TIMEOUT_S + 60)
    _answered(target, bearer)
    podman.run("start", first)
    wait_for(
        f"{first} serving again",
        lambda: podman.logs(first).count("serving on 0.0.0.0:50051") >= 2 or None,
        120,
    )
    after = project.address(first)
    podman.run("stop", "--time", str(STOP_TIMEOUT_S), second, timeout=STOP_TIMEOUT_S + 60)
    wait_for("nginx finding the restarted replica", lambda: serving(target), 60)
    _answered(target, bearer)
    say(
        f"compose: a replica stopped, calls answered; restarted ({before} -> {after}) "
        "with the other stopped, nginx found it"
    )
    podman.run("stop", "--time", str(STOP_TIMEOUT_S), first, timeout=STOP_TIMEOUT_S + 60)
    for replica in replicas:
        code = podman.output("inspect", "--format", "{{.State.ExitCode}}", replica)
        if code != "0" or "shutting down: in-flight calls have" not in podman.logs(replica):
            raise CheckFailed(f"{replica} did not drain on SIGTERM (exit {code})")
    say("compose: SIGTERM drained both replicas, exit code 0")
