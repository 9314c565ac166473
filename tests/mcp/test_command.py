"""The MCP command as an MCP client launches it, both ways it is installed:
the server's ``mnemo mcp`` and the client's own (``mnemo-mcp``, ``python -m
mnemo.integrations.mcp``; ``mnemo-client[mcp]`` alone, tests/dist/mcp_extra.py):
over stdio (the SDK's stdio client starts the command) against a real server
with ``--auth jwt``, the user taken from the token; over streamable HTTP on a
free loopback port; and the usage errors that stop it before it serves.
SQLite only: the transports do not depend on the store."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mnemo.client import MnemoClient
from mnemo.integrations import mcp_command
from mnemo_server.cli.main import main
from tests.mcp.conftest import http_command, refused, succeeded
from tests.support.server import running_server
from tests.support.tokens import SigningKeys

pytestmark = pytest.mark.sqlite

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


COMMANDS = {
    "mnemo-mcp": [sys.executable, "-m", "mnemo.integrations.mcp"],
    "mnemo mcp": [sys.executable, "-m", "mnemo_server", "mcp"],
}


@pytest.fixture(params=sorted(COMMANDS))
def command(request: pytest.FixtureRequest) -> list[str]:
    """The command line that starts the MCP command, one way or the other."""
    return COMMANDS[request.param]


async def test_stdio_with_the_user_of_a_token(tmp_path: Path, command: list[str]) -> None:
    keys = SigningKeys.hs256()
    token = keys.token("alice")
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    database = f"sqlite:///{tmp_path / 'mnemo.db'}"
    with running_server(database, **keys.server_settings(tmp_path)) as target:
        args = [*command, "--target", target, "--token-file", str(token_file)]
        launched = StdioServerParameters(command=args[0], args=args[1:])
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


async def test_streamable_http(tmp_path: Path, command: list[str]) -> None:
    with running_server(f"sqlite:///{tmp_path / 'mnemo.db'}") as target:
        token_file = tmp_path / "mcp-token"
        args = [*command, "--transport", "http", "--listen", "127.0.0.1:0"]
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


MAINS: dict[str, Callable[[Sequence[str]], int]] = {
    "mnemo-mcp": lambda args: mcp_command.main(args, env={}),
    "mnemo mcp": lambda args: main(["mcp", *args], env={}),
}


@pytest.mark.parametrize("name", sorted(MAINS))
def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """In process (``mnemo_server.cli.main``, ``mcp_command.main``): the
    subprocess tests above run the entry points."""

    def refused_usage(*args: str) -> str:
        assert MAINS[name](list(args)) == 2
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
