"""Fixtures of the MCP suite: a real Mnemo server per backend, a fresh user per
test, and the MCP server of ``mnemo.integrations.mcp`` reached in process with
the SDK's own client (``mcp.Client(server)``).

One Mnemo server per backend serves the whole module (every test acts for its
own new user, so tests never see each other's data).
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from mnemo.client import MnemoClient
from mnemo.integrations.mcp import Identity, build_server
from tests.support.databases import PostgresDatabases
from tests.support.server import running_server

COMMAND_START_TIMEOUT_S = 60.0
COMMAND_STOP_TIMEOUT_S = 30.0
_SERVING_HTTP = re.compile(r"serving MCP on (http://\S+) for .*'Authorization: Bearer (\S+)'")

BACKENDS = [
    pytest.param("sqlite", id="sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@dataclass(frozen=True)
class MnemoServer:
    """A running Mnemo server and its database."""

    target: str
    database_url: str


@pytest.fixture(scope="module", params=BACKENDS)
def mnemo_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MnemoServer]:
    """A real Mnemo server on a fresh database of the backend."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('mcp-suite') / 'mnemo.db'}"
        with running_server(url) as target:
            yield MnemoServer(target, url)
        return
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    url = databases.fresh()
    try:
        with running_server(url) as target:
            yield MnemoServer(target, url)
    finally:
        databases.drop(url)


@pytest.fixture
def mnemo_target(mnemo_server: MnemoServer) -> str:
    """``host:port`` of the module's Mnemo server."""
    return mnemo_server.target


@pytest.fixture
def user() -> str:
    """A user id no other test uses."""
    return f"u-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def mnemo(mnemo_target: str) -> Iterator[MnemoClient]:
    """A plain client of the same server, to set up and check what the tools did."""
    with MnemoClient(mnemo_target) as client:
        yield client


@asynccontextmanager
async def mcp_client(target: str, identity: Identity) -> AsyncIterator[Client]:
    """The SDK's client connected in process to the Mnemo MCP server of ``identity``."""
    async with Client(build_server(target, identity)) as client:
        yield client


def result_text(result: CallToolResult) -> str:
    """The text of a tool result (one text block)."""
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert len(texts) == 1, result
    return texts[0]


def succeeded(result: CallToolResult) -> Any:
    """The structured result of a call that must have succeeded."""
    assert not result.is_error, result_text(result)
    return result.structured_content


def refused(result: CallToolResult) -> str:
    """The error text of a call that must have failed as a tool error."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None
    return result_text(result)


@contextmanager
def http_command(args: list[str], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, str]]:
    """``mnemo mcp --transport http`` running (``args``, its output in ``log``);
    yields the process, the endpoint's URL and the bearer token it printed."""
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + COMMAND_START_TIMEOUT_S
        while not (found := _SERVING_HTTP.search(log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield process, found.group(1), found.group(2)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(COMMAND_STOP_TIMEOUT_S)
