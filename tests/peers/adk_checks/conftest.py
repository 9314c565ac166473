"""Fixtures of the Google ADK checks (``make test-adk``, in .venv-adk).

One real Mnemo server (``$MNEMO_SERVE serve``, the project venv's ``mnemo``)
on 127.0.0.1 over a throwaway SQLite database for the whole run, started by
``server``; ``service`` is each session service the shared cases run on.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService

from mnemo.integrations.adk import MnemoSessionService

START_TIMEOUT_S = 60.0
_SERVING_ON = re.compile(r" serving on (\S+):(\d+) ")


class Server:
    """A ``mnemo serve`` process."""

    def __init__(self, directory: Path, *flags: str) -> None:
        self.target = ""
        self.directory = directory
        self._flags = flags
        self._log = directory / "server.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = os.environ.get("MNEMO_SERVE", "mnemo")
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    command,
                    "serve",
                    "--listen",
                    "127.0.0.1:0",
                    "--database-url",
                    f"sqlite:///{self.directory / 'mnemo.db'}",
                    "--embedder",
                    "none",
                    *self._flags,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = _SERVING_ON.search(self._log.read_text(errors="replace"))
            if found:
                self.target = f"127.0.0.1:{found.group(2)}"
                return
            if self._process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mnemo serve did not start:\n" + self._log.read_text(errors="replace"))

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(30)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory(prefix="mnemo-adk-") as directory:
        running = Server(Path(directory))
        running.start()
        try:
            yield running
        finally:
            running.stop()


class JwtServer(Server):
    """A ``mnemo serve --auth jwt`` over an HS256 secret; ``token`` signs its tokens."""

    AUDIENCE = "mnemo-adk-test"

    def __init__(self, directory: Path) -> None:
        self.secret = secrets.token_urlsafe(48).encode()
        (directory / "jwt.secret").write_bytes(self.secret)
        super().__init__(
            directory,
            "--auth",
            "jwt",
            "--jwt-hs256-secret-file",
            str(directory / "jwt.secret"),
            "--jwt-audience",
            self.AUDIENCE,
        )

    def token(self, sub: str, *, admin: bool = False) -> str:
        """An HS256 token for ``sub`` (tenant ``t1``; the admin role when ``admin``)."""
        now = int(time.time())
        claims: dict[str, Any] = {"sub": sub, "aud": self.AUDIENCE, "iat": now, "exp": now + 300}
        claims["tenant"] = "t1"
        if admin:
            claims["roles"] = ["mnemo:admin"]

        def part(value: dict[str, Any]) -> str:
            raw = json.dumps(value, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        signed = f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}"
        signature = hmac.new(self.secret, signed.encode(), hashlib.sha256).digest()
        return f"{signed}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


@pytest.fixture
def jwt_server(tmp_path: Path) -> Iterator[JwtServer]:
    running = JwtServer(tmp_path)
    running.start()
    try:
        yield running
    finally:
        running.stop()


#: The session services every shared case runs on.
SERVICES = ("mnemo", "database", "in_memory")


@pytest.fixture(params=SERVICES)
async def service(
    request: pytest.FixtureRequest, server: Server, tmp_path: Path
) -> AsyncIterator[BaseSessionService]:
    kind: str = request.param
    made: Any
    if kind == "mnemo":
        made = MnemoSessionService(server.target)
    elif kind == "database":
        made = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    else:
        made = InMemorySessionService()
    try:
        yield made
    finally:
        if hasattr(made, "close"):
            await made.close()


@pytest.fixture
def app_name() -> str:
    """An app of this test alone (the Mnemo server is shared by the run)."""
    return f"app-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def user_id() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each intended difference (test_session_cases.INTENDED_DIFFERENCES) a strict xfail."""
    from test_session_cases import INTENDED_DIFFERENCES

    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "service" not in callspec.params:
            continue
        name = item.name.split("[", 1)[0]
        reason = INTENDED_DIFFERENCES.get((name, callspec.params["service"]))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
