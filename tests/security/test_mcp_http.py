"""``mnemo mcp --transport http`` probed from another local process.

The endpoint acts as its user, so it asks every request for a bearer token:
a random secret in a file only its owner can read (``--http-token-file``),
printed at start. Without it, or with another, the answer is 401 and nothing
is read or written; with it, the SDK's own client works. A foreign ``Host``
(DNS rebinding) or ``Origin`` is still refused, token or not; a token file
others can read is refused at start. stdio is unchanged (``tests/mcp``).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mnemo.client import MnemoClient
from tests.mcp.conftest import http_command, succeeded
from tests.support.server import running_server

pytestmark = [pytest.mark.sqlite, pytest.mark.timeout(120)]

STOP_TIMEOUT_S = 30.0
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str

    def post(self, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
        try:
            named = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                **headers,
            }
            connection.putrequest("POST", parts.path, skip_host="Host" in named)
            body = json.dumps(_INITIALIZE).encode()
            for key, value in {**named, "content-length": str(len(body))}.items():
                connection.putheader(key, value)
            connection.endheaders(body)
            response = connection.getresponse()
            found = {key.lower(): value for key, value in response.getheaders()}
            return response.status, found, response.read()
        finally:
            connection.close()


@contextmanager
def mcp_http(target: str, token_file: Path, log: Path) -> Iterator[Endpoint]:
    args = [sys.executable, "-m", "mnemo_server", "mcp", "--transport", "http"]
    args += ["--listen", "127.0.0.1:0", "--target", target, "--user", "carol"]
    args += ["--http-token-file", str(token_file)]
    with http_command(args, log) as (_, url, token):
        yield Endpoint(url, token)


def test_the_http_endpoint_asks_for_its_token(tmp_path: Path) -> None:
    token_file = tmp_path / "config" / "mcp-token"
    with running_server(f"sqlite:///{tmp_path / 'mnemo.db'}") as target:
        with MnemoClient(target) as mnemo:
            mnemo.create_memory("carol", "carol diary")
        with mcp_http(target, token_file, tmp_path / "mcp.log") as endpoint:
            # The secret is in a file only its owner can read, and is the one printed.
            mode = stat.S_IMODE(token_file.stat().st_mode)
            assert mode == 0o600, oct(mode)
            assert stat.S_IMODE(token_file.parent.stat().st_mode) & 0o077 == 0
            assert token_file.read_text().strip() == endpoint.token
            assert len(endpoint.token) >= 32

            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic x"}):
                status, answered, body = endpoint.post(headers)
                assert status == 401, (headers, status, body)
                assert answered["www-authenticate"].startswith("Bearer")
                assert b"carol diary" not in body

            good = {"authorization": f"Bearer {endpoint.token}"}
            assert endpoint.post(good)[0] == 200
            # Rebinding and cross-site pages are refused with the token too.
            port = urlsplit(endpoint.url).port
            rebound = {**good, "Host": f"evil.example:{port}"}
            assert endpoint.post(rebound)[0] == 421
            assert endpoint.post({**good, "origin": "http://evil.example"})[0] == 403

            # The SDK's own client, sending the header, works end to end.
            client = create_mcp_http_client(headers=good)
            async_client = Client(streamable_http_client(endpoint.url, http_client=client))
            _save_through(async_client)

        # A restart reuses the owner's file: the same token keeps working.
        with mcp_http(target, token_file, tmp_path / "mcp2.log") as again:
            assert again.token == endpoint.token

        with MnemoClient(target) as mnemo:
            texts = sorted(m.text for m in mnemo.list_memories("carol"))
        assert texts == ["carol diary", "saved over HTTP"]


def _save_through(client: Client) -> None:
    async def save() -> None:
        async with client:
            succeeded(await client.call_tool("memory_save", {"text": "saved over HTTP"}))

    asyncio.run(save())


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "mcp-token"
    token_file.write_text("x" * 43 + "\n")
    os.chmod(token_file, 0o644)
    args = [sys.executable, "-m", "mnemo_server", "mcp", "--transport", "http"]
    args += ["--listen", "127.0.0.1:0", "--user", "carol", "--http-token-file", str(token_file)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=STOP_TIMEOUT_S)
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and "chmod 600" in done.stderr, done.stderr
