"""``--log-format json`` and the GOAWAY noise, on real servers.

JSON: every line ``mnemo serve`` writes is one JSON object; each call adds
an access line (method, code, duration_ms, user) and never the text of a
message or a memory; under ``--auth jwt`` the user is the verified caller.

GOAWAY: a Node HTTP/2 client that ends its connection as the TypeScript
client's ``close()`` does (``Http2SessionManager.abort()`` destroys the
session with NGHTTP2_CANCEL, a GOAWAY with error code 8) made gRPC's core
log ``Got goaway [8] err=UNAVAILABLE:GOAWAY received`` at its INFO level;
``mnemo serve`` leaves no such line, while ``GRPC_VERBOSITY=INFO`` (the
control) still shows it.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.observability.interceptor import ACCESS_LOGGER
from tests.support.server import ServerThread, server_settings
from tests.support.subprocess_server import subprocess_server
from tests.support.tokens import SigningKeys, bearer

# Looks like a name on purpose: the access line must not take its user from it.
MEMORY_TEXT = "users/mallory/memory-text-that-must-never-be-logged"
MESSAGE_TEXT = "message-text-that-must-never-be-logged"
CREATE = "/mnemo.v1.MemoryService/CreateMemory"
GET = "/mnemo.v1.MemoryService/GetMemory"
APPEND = "/mnemo.v1.ConversationService/AppendMessages"
NODE_TIMEOUT_S = 30

# One call, then the session destroyed with NGHTTP2_CANCEL: what
# @connectrpc/connect-node's Http2SessionManager.abort() (the TypeScript
# client's close()) sends.
_NODE_DISCONNECT = """
const http2 = require("node:http2");
const session = http2.connect("http://" + process.argv[1]);
session.on("error", () => {});
const call = session.request({
  ":method": "POST", ":path": "/grpc.health.v1.Health/Check",
  "content-type": "application/grpc", te: "trailers",
});
call.on("error", () => {});
call.on("data", () => {});
call.on("end", () => session.destroy(new Error("closed"), http2.constants.NGHTTP2_CANCEL));
call.end(Buffer.from([0, 0, 0, 0, 0]));
"""

sqlite_only = pytest.mark.parametrize("backend", ["sqlite"])


def _node_disconnects(target: str) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    subprocess.run([node, "-e", _NODE_DISCONNECT, target], check=True, timeout=NODE_TIMEOUT_S)


def _calls(target: str, metadata: Any = None) -> None:
    with grpc.insecure_channel(target) as channel:
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        memories.CreateMemory(
            mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text=MEMORY_TEXT)),
            metadata=metadata,
        )
        conversations_pb2_grpc.ConversationServiceStub(channel).AppendMessages(
            cv.AppendMessagesRequest(
                conversation="users/alice/conversations/chat",
                messages=[
                    cv.HistoryMessage(
                        message_json=json.dumps({"role": "user", "content": MESSAGE_TEXT})
                    )
                ],
            ),
            metadata=metadata,
        )
        with pytest.raises(grpc.RpcError) as missing:
            memories.GetMemory(mm.GetMemoryRequest(name="users/bob/memories/m1"), metadata=metadata)
        assert missing.value.code() is grpc.StatusCode.NOT_FOUND


@sqlite_only
def test_json_logs_are_one_object_per_line_with_an_access_line_per_call(
    database_url: str, tmp_path: Path
) -> None:
    with subprocess_server(database_url, "--log-format", "json", log_dir=tmp_path) as server:
        _calls(server.target)
        _node_disconnects(server.target)
        assert server.stop() == 0
        text = server.log_text()

    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert len(lines) == len(text.strip().splitlines())  # nothing but JSON lines
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys()
    assert any("serving on" in line["message"] for line in lines)
    access = [line for line in lines if line["logger"] == ACCESS_LOGGER]
    by_method = {(line["method"], line["code"]): line for line in access}
    assert by_method[(CREATE, "OK")]["user"] == "alice"
    assert by_method[(APPEND, "OK")]["user"] == "alice"
    assert by_method[(GET, "NOT_FOUND")]["user"] == "bob"  # the request's user (--auth none)
    for line in access:
        assert line["level"] == "INFO"
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert MEMORY_TEXT not in text and MESSAGE_TEXT not in text
    assert "goaway" not in text.lower()


@sqlite_only
def test_a_node_client_disconnecting_leaves_no_goaway_line(
    database_url: str, tmp_path: Path
) -> None:
    logs = {}
    for verbosity in ("", "INFO"):  # mnemo's default, and gRPC's chatter as a control
        env = {"GRPC_VERBOSITY": verbosity} if verbosity else {}
        with subprocess_server(
            database_url, env=env, log_dir=tmp_path / (verbosity or "default")
        ) as server:
            _node_disconnects(server.target)
            assert server.stop() == 0
            logs[verbosity] = server.log_text()
    assert "Got goaway" in logs["INFO"]
    assert "goaway" not in logs[""].lower()
    assert " serving on " in logs[""]


@sqlite_only
def test_the_access_line_names_the_verified_caller_under_jwt(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = SigningKeys.hs256()
    settings = server_settings(database_url, log_format="json", **keys.server_settings(tmp_path))
    thread = ServerThread(settings)
    target = thread.start()
    # An aborted call's status reaches the client before its line is logged:
    # stop (which waits for every call) before looking.
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        try:
            _calls(target, metadata=bearer(keys.token("alice")))
        finally:
            thread.stop()
    records = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    found = {(r.__dict__["method"], r.__dict__["code"]): r.__dict__["user"] for r in records}
    assert found[(CREATE, "OK")] == "alice"
    # Naming bob's memory with alice's token: the user is alice, who called.
    assert found[(GET, "NOT_FOUND")] == "alice"
    assert all(MEMORY_TEXT not in r.getMessage() for r in records)


@sqlite_only
def test_no_access_lines_in_the_text_format(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    thread = ServerThread(server_settings(database_url))
    target = thread.start()
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        try:
            _calls(target)
        finally:
            thread.stop()
    assert [r for r in caplog.records if r.name == ACCESS_LOGGER] == []
