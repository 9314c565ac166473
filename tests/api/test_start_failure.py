"""A ``MnemoServer.start`` that fails at a late step leaves nothing open.

Real servers on 127.0.0.1 over a real SQLite file: the gRPC port or the web
port is taken by a socket of the test, the start fails with ``cannot listen``,
and afterwards no descriptor of the process points at the database file, no
asyncio task is left running, no thread of the database is alive, the
web port's private socket directory is gone and the gRPC port the attempt had
bound is free again. Once the port is released, a second ``start`` of the
same server object serves (health SERVING, a real RPC), and its ``stop``
leaves nothing open either.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from mnemo_server.app import MnemoServer
from mnemo_server.config import Settings

pytestmark = [pytest.mark.sqlite, pytest.mark.timeout(120)]

SERVING = health_pb2.HealthCheckResponse.SERVING


def _descriptors_to(database: Path) -> int:
    """Open descriptors of this process on the database file (or its -wal, -shm)."""
    prefix = str(database.resolve())
    count = 0
    for entry in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(entry)
        except OSError:  # closed since listed (the listing's own descriptor)
            continue
        count += target.startswith(prefix)
    return count


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` (SO_REUSEADDR: a closed socket's TIME_WAIT does not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@contextmanager
def _taken_port() -> Iterator[tuple[socket.socket, int]]:
    """A port of 127.0.0.1 some other program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock, int(sock.getsockname()[1])


@pytest.fixture
def web_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the web port makes its private socket directories (``mnemo-web-*``) in this test."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _leftovers(database: Path, web_directories: Path) -> dict[str, object]:
    """What is still open, called on the event loop of the server."""
    return {
        "database descriptors": _descriptors_to(database),
        "tasks": sorted(
            task.get_name() for task in asyncio.all_tasks() if task is not asyncio.current_task()
        ),
        # The database's lanes (mnemo-read-N, mnemo-write-N).
        "threads": sorted(t.name for t in threading.enumerate() if t.name.startswith("mnemo-")),
        "web socket directories": sorted(p.name for p in web_directories.glob("mnemo-web-*")),
    }


NOTHING_LEFT = {
    "database descriptors": 0,
    "tasks": [],
    "threads": [],
    "web socket directories": [],
}


async def _serves(server: MnemoServer) -> bool:
    """Health SERVING and an RPC that reads the database, over a real channel."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=30
        )
        listed = await conversations_pb2_grpc.ConversationServiceStub(channel).ListConversations(
            cv.ListConversationsRequest(parent="users/u1"), timeout=30
        )
    return health.status == SERVING and len(listed.conversations) == 0


@pytest.mark.parametrize("taken", ["grpc", "web"])
def test_a_taken_port_leaves_nothing_open_and_a_retry_serves(
    taken: str, tmp_path: Path, web_directories: Path
) -> None:
    """The gRPC port fails the bind step; the web port fails the last step,
    when the database, the notifier, the background tasks and the started
    gRPC server are all open."""
    database = tmp_path / "mnemo.db"

    async def scenario() -> None:
        with _taken_port() as (blocker, taken_port):
            grpc_port = taken_port if taken == "grpc" else _free_port()
            web_port = taken_port if taken == "web" else _free_port()
            settings = dataclasses.replace(
                Settings(),
                database_url=f"sqlite:///{database}",
                listen=f"127.0.0.1:{grpc_port}",
                web_listen=f"127.0.0.1:{web_port}",
            )
            server = MnemoServer(settings)
            with pytest.raises(RuntimeError, match=f"cannot listen on 127.0.0.1:{taken_port}"):
                await server.start()
            assert _leftovers(database, web_directories) == NOTHING_LEFT
            if taken == "web":
                assert _port_is_free(grpc_port), "the failed start left its gRPC port bound"
            blocker.close()
            assert await server.start() == grpc_port
        try:
            assert await _serves(server)
            assert server.web_port == web_port
            # The probes do see what a running server has open.
            running = _leftovers(database, web_directories)
            assert running["database descriptors"] != 0
            assert running["threads"] and running["tasks"] and running["web socket directories"]
        finally:
            await server.stop(0)
        assert _leftovers(database, web_directories) == NOTHING_LEFT
        assert _port_is_free(grpc_port) and _port_is_free(web_port)

    asyncio.run(scenario())
