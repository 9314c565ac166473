"""The image run as docs/deployment.md says (a volume for /var/lib/mnemo, the
JWT secret mounted at /run/secrets/mnemo-jwt-secret, readable by uid 10001):
its ``HEALTHCHECK``, the README's Python tour from this machine, SIGTERM
(``podman stop``), a new container on the same volume, and the health check
of a container listening on another ``MNEMO_LISTEN`` (issue 36, item 4)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from mnemo.client import MnemoClient
from tests.support.readme_tour import tour_code, tour_output
from tools.image_check.common import (
    CheckFailed,
    Podman,
    loopback_port,
    say,
    serving,
    token,
    wait_for,
)
from tools.image_check.images import IMAGE

SECRET_PATH = "/run/secrets/mnemo-jwt-secret"
START_TIMEOUT_S = 120.0
# podman stop's wait before SIGKILL: above the image's MNEMO_GRACE_PERIOD_SECONDS (20).
STOP_TIMEOUT_S = 40
TOUR_TARGET = 'MnemoClient("127.0.0.1:50051")'


def _start(podman: Podman, name: str, secret_file: Path, *flags: str) -> None:
    podman.started_container(name)
    podman.run(
        "run", "--detach", "--name", name,
        "--volume", f"{secret_file}:{SECRET_PATH}:ro",
        *flags, IMAGE,
    )  # fmt: skip


def _healthy(podman: Podman, name: str) -> None:
    """The image's HEALTHCHECK passes (``podman healthcheck run``)."""

    def check() -> bool | None:
        done = podman.run("healthcheck", "run", name, check=False, timeout=60)
        return True if done.returncode == 0 else None

    wait_for(f"{name}'s HEALTHCHECK", check, START_TIMEOUT_S)


def _stop(podman: Podman, name: str) -> None:
    """SIGTERM (the image's STOPSIGNAL): the server drains and exits 0 by itself."""
    podman.run("stop", "--time", str(STOP_TIMEOUT_S), name, timeout=STOP_TIMEOUT_S + 60)
    code = podman.output("inspect", "--format", "{{.State.ExitCode}}", name)
    log = podman.logs(name)
    if code != "0" or "shutting down: in-flight calls have" not in log or "stopped" not in log:
        raise CheckFailed(f"{name} did not drain and exit 0 on SIGTERM (exit {code}):\n{log}")


def _tour(target: str, secret: str, scratch: Path) -> None:
    """The README's Python tour, run by this checkout's Python with a token."""
    code = tour_code("python")
    if code.count(TOUR_TARGET) != 1:
        raise CheckFailed(f"the README's Python tour no longer opens {TOUR_TARGET}")
    client = f'MnemoClient("{target}", token={token(secret, "ada")!r})'
    tour = scratch / "tour.py"
    tour.write_text(code.replace(TOUR_TARGET, client))
    done = subprocess.run(
        [sys.executable, str(tour)], capture_output=True, text=True, timeout=120, check=False
    )
    printed = done.stdout.splitlines()
    if done.returncode != 0 or printed != tour_output("python"):
        raise CheckFailed(f"the README's Python tour printed:\n{done.stdout}{done.stderr}")


def _kept(target: str, secret: str) -> None:
    """What the tour wrote is there."""
    with MnemoClient(target, token=token(secret, "ada")) as mnemo:
        texts = [memory.text for memory in mnemo.list_memories("ada")]
        roles = [message.role for message in mnemo.list_messages("ada", "thread-1")]
    if "Ada prefers vegan recipes." not in texts or roles != ["user", "assistant"]:
        raise CheckFailed(f"the volume lost the tour's data: {texts}, {roles}")


def check_container(podman: Podman, scratch: Path) -> None:
    secret = secrets.token_urlsafe(48)
    secret_file = scratch / "jwt-secret"
    secret_file.write_text(secret)
    secret_file.chmod(0o644)  # the image runs as uid 10001
    prefix = f"mnemo-check-{os.getpid()}"
    volume = f"{prefix}-data"
    podman.created_volume(volume)
    podman.run("volume", "create", volume)

    first, port = f"{prefix}-first", loopback_port()
    data = ("--volume", f"{volume}:/var/lib/mnemo", "--publish", f"127.0.0.1:{port}:50051")
    _start(podman, first, secret_file, *data)
    target = f"127.0.0.1:{port}"
    wait_for(f"{first} serving on {target}", lambda: serving(target), START_TIMEOUT_S)
    _healthy(podman, first)
    say("container: serving, HEALTHCHECK passes")
    _tour(target, secret, scratch)
    say("container: the README's Python tour printed what the README shows")
    _stop(podman, first)
    say("container: SIGTERM drained it, exit code 0")

    second = f"{prefix}-second"
    _start(podman, second, secret_file, *data)
    wait_for(f"{second} serving on {target}", lambda: serving(target), START_TIMEOUT_S)
    _kept(target, secret)
    _stop(podman, second)
    say("container: a new container on the same volume has the tour's data")

    other = f"{prefix}-listen"
    _start(podman, other, secret_file, "--env", "MNEMO_LISTEN=0.0.0.0:6000")
    _healthy(podman, other)
    if "serving on 0.0.0.0:6000" not in podman.logs(other):
        raise CheckFailed(f"{other} does not serve on MNEMO_LISTEN:\n{podman.logs(other)}")
    _stop(podman, other)
    say("container: HEALTHCHECK passes on MNEMO_LISTEN=0.0.0.0:6000 too")
