"""``mnemo mcp`` as an MCP client launches it: over stdio (the SDK's stdio
client starts the command) against a real server with ``--auth jwt``, the
user taken from the token; over streamable HTTP on a free loopback port; and
the usage errors that stop it before it serves. SQLite only: the transports
do not depend on the store."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mnemo.client import MnemoClient
from mnemo_server.cli.main import main
from tests.mcp.conftest import http_command, refused, succeeded
from tests.support.server import running_server
from tests.support.tokens import SigningKeys

pytestmark = pytest.mark.sqlite

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


def _mnemo_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "mnemo_server", "mcp", *args]


async def test_stdio_with_the_user_of_a_token(tmp_path: Path) -> None:
    keys = SigningKeys.hs256()
    token = keys.token("alice")
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    database = f"sqlite:///{tmp_path / 'mnemo.db'}"
    with running_server(database, **keys.server_settings(tmp_path)) as target:
        command = _mnemo_mcp("--target", target, "--token-file", str(token_file))
        launched = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(launched) as client:
            assert len((await client.list_tools()).tools) == 8
            saved = succeeded(await client.call_tool("memory_save", {"text": "Lives in Oslo"}))
            recalled = succeeded(await client.call_tool("memory_recall", {"query": "Oslo"}))
            assert [h["memory"]["id"] for h in recalled["hits"]] == [saved["memory"]["id"]]
            # The token file is read before every call: an expired token now refuses.
            token_file.write_text(keys.token("alice", expires_in=-3600))
            expired = refused(await client.call_tool("memory_list"))
            assert "UNAUTHENTICATED" in expired
        with MnemoClient(target, token=token) as mnemo:
            assert [m.text for m in mnemo.list_memories("alice")] == ["Lives in Oslo"]


async def test_streamable_http(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path / 'mnemo.db'}") as target:
        token_file = tmp_path / "mcp-token"
        args = _mnemo_mcp("--transport", "http", "--listen", "127.0.0.1:0")
        args += ["--target", target, "--user", "bob", "--conversation", "c1"]
        args += ["--http-token-file", str(token_file)]
        with http_command(args, tmp_path / "mcp.log") as (process, url, token):
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            # tests/security/test_mcp_http.py: what happens without the token.
            assert token == token_file.read_text().strip()
            bearer = {"authorization": f"Bearer {token}"}
            http = create_mcp_http_client(headers=bearer)
            async with Client(streamable_http_client(url, http_client=http)) as client:
                succeeded(await client.call_tool("memory_save", {"text": "Has a red bike"}))
                context = succeeded(await client.call_tool("memory_context", {"query": "bike"}))
                assert "Has a red bike" in context["system_message"]
                remembered = succeeded(
                    await client.call_tool(
                        "working_memory_remember", {"ask": "Hi?", "answer": "Hi"}
                    )
                )
                assert [e["ask"] for e in remembered["state"]["recent"]] == ["Hi?"]
            process.send_signal(signal.SIGTERM)
            assert process.wait(STOP_TIMEOUT_S) == 0
        with MnemoClient(target) as mnemo:
            assert [m.text for m in mnemo.list_memories("bob")] == ["Has a red bike"]
            assert [e.ask for e in mnemo.get_memory_state("bob", "c1").recent] == ["Hi?"]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In process (``mnemo_server.cli.main``): the subprocess tests above run the entry point."""

    def refused_usage(*args: str) -> str:
        assert main(["mcp", *args], env={}) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        return captured.err

    assert "give --user" in refused_usage("--target", "127.0.0.1:1")
    assert "not a JWT" in refused_usage("--token", "secret")
    assert "no 'sub' claim" in refused_usage("--token", "e30.e30.e30")  # {} as claims
    assert "cannot read" in refused_usage("--token-file", str(tmp_path / "none"))
    assert "cannot read" in refused_usage("--user", "u1", "--ca-file", str(tmp_path / "none"))
    assert "goes with --transport http" in refused_usage(
        "--user", "u1", "--http-token-file", str(tmp_path / "t")
    )
    exposed = ("--user", "u1", "--transport", "http", "--listen", "0.0.0.0:0")
    assert "not a loopback address" in refused_usage(*exposed)
    assert "is not HOST:PORT" in refused_usage(*exposed[:4], "--listen", "8080")
