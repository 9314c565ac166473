"""PostgreSQL refusing writes, through a real ``mnemo serve``:

- its own full disk (SQLSTATE 53100, ``disk_full``): the history's table
  lives in a tablespace on a small tmpfs made for the test, a filler file
  takes the rest of it. A write that needs space is refused with
  ``RESOURCE_EXHAUSTED`` / ``STORAGE_FULL`` (as on SQLite), nothing of it is
  stored, reads keep working, and once the filler is deleted the same write
  succeeds without restarting the server;
- a read-only database (SQLSTATE 25006: a standby after a failover, here a
  database set ``default_transaction_read_only``): writes answer
  ``UNAVAILABLE``, never ``INTERNAL``, and succeed again once writes are
  accepted (the primary is back), without a restart.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import grpc
import psycopg
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from tests.concurrency.test_full_disk import _fill, _mount_tmpfs, _unmount
from tests.support.databases import PostgresDatabases
from tests.support.pgcluster import ThrowawayPostgres, libpq_url
from tests.support.rpc_errors import error_details
from tests.support.subprocess_server import subprocess_server

pytestmark = pytest.mark.postgres

TIMEOUT_S = 30.0
CONVERSATION = "users/alice/conversations/c1"
BIG_MESSAGES = 8
BIG_CHARS = 250_000
T = TypeVar("T")


def _message(text: str) -> cv.HistoryMessage:
    return cv.HistoryMessage(message_json=json.dumps({"role": "user", "content": text}))


def _contents(history: conversations_pb2_grpc.ConversationServiceStub) -> list[str]:
    listed = history.ListMessages(
        cv.ListMessagesRequest(parent=CONVERSATION, page_size=1000), timeout=TIMEOUT_S
    )
    return [json.loads(m.message_json)["content"] for m in listed.messages]


def _admin(server: ThrowawayPostgres) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(libpq_url(server.url), autocommit=True)


def _database_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def _end_sessions(server: ThrowawayPostgres, name: str) -> None:
    """End every session of database ``name`` (the server's pooled ones)."""
    with _admin(server) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )


@pytest.fixture
def own_cluster(postgres_server: ThrowawayPostgres) -> ThrowawayPostgres:
    if postgres_server.external or postgres_server.data_dir is None:
        pytest.skip("needs the throwaway cluster (a tablespace on a local tmpfs)")
    return postgres_server


@pytest.fixture
def fresh_url(postgres_databases: PostgresDatabases) -> Iterator[str]:
    url = postgres_databases.fresh()
    try:
        yield url
    finally:
        postgres_databases.drop(url)


def _eventually(call: Callable[[], T]) -> T:
    """``call``, again while it answers ``UNAVAILABLE`` (a pooled session the
    test ended is dropped on first use), within ``TIMEOUT_S``."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return call()
        except grpc.RpcError as error:
            assert error.code() is grpc.StatusCode.UNAVAILABLE, error
            assert time.monotonic() < deadline, "still unavailable"
            time.sleep(0.2)


def _refused(call: Callable[[], T]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return refused.value


@pytest.mark.timeout(240)
def test_its_own_full_disk_refuses_writes_keeps_reads_and_recovers(
    own_cluster: ThrowawayPostgres, fresh_url: str, tmp_path: Path
) -> None:
    name = _database_name(fresh_url)
    assert own_cluster.data_dir is not None
    # Beside the cluster's data: a directory its server's user can reach.
    disk = own_cluster.data_dir.parent / f"tablespace-{name}"
    disk.mkdir()
    _mount_tmpfs(disk)
    space = f"small_{name}"
    try:
        owner = own_cluster.data_dir.stat()
        os.chown(disk, owner.st_uid, owner.st_gid)
        with _admin(own_cluster) as conn:
            conn.execute(f"CREATE TABLESPACE {space} LOCATION '{disk}'")
        with psycopg.connect(libpq_url(fresh_url), autocommit=True) as conn:
            conn.execute(f"ALTER TABLE messages SET TABLESPACE {space}")
        with (
            subprocess_server(fresh_url, "--embedder", "none", log_dir=tmp_path / "logs") as server,
            grpc.insecure_channel(server.target) as channel,
        ):
            history = conversations_pb2_grpc.ConversationServiceStub(channel)
            earlier = [f"earlier {n}" for n in range(20)]
            history.AppendMessages(
                cv.AppendMessagesRequest(
                    conversation=CONVERSATION,
                    messages=[_message(text) for text in earlier],
                    request_id="earlier",
                ),
                timeout=TIMEOUT_S,
            )
            filler = disk / "filler"
            assert _fill(filler) > 0
            big = [f"{n} " + "x" * BIG_CHARS for n in range(BIG_MESSAGES)]
            request = cv.AppendMessagesRequest(
                conversation=CONVERSATION,
                messages=[_message(text) for text in big],
                request_id="big",
            )
            details = error_details(
                _refused(lambda: history.AppendMessages(request, timeout=TIMEOUT_S))
            )
            assert details.code is grpc.StatusCode.RESOURCE_EXHAUSTED, details
            assert details.reason == "STORAGE_FULL", details
            assert _contents(history) == earlier  # reads still work, nothing half-written

            filler.unlink()
            appended = history.AppendMessages(request, timeout=TIMEOUT_S)
            assert [m.position for m in appended.messages] == list(
                range(len(earlier), len(earlier) + BIG_MESSAGES)
            )
            assert _contents(history) == earlier + big
            assert server.starts == 1
            assert server.stop() == 0
        log = server.log_text()
        assert "is full" in log and "Traceback" not in log, server.log_tail()
    finally:
        with psycopg.connect(libpq_url(fresh_url), autocommit=True) as conn:
            conn.execute("ALTER TABLE messages SET TABLESPACE pg_default")
        with _admin(own_cluster) as conn:
            conn.execute(f"DROP TABLESPACE IF EXISTS {space}")
        _unmount(disk)
        disk.rmdir()


@pytest.mark.timeout(240)
def test_a_read_only_database_is_unavailable_and_writes_resume_when_it_is_not(
    postgres_server: ThrowawayPostgres, fresh_url: str, tmp_path: Path
) -> None:
    name = _database_name(fresh_url)
    with (
        subprocess_server(fresh_url, "--embedder", "none", log_dir=tmp_path / "logs") as server,
        grpc.insecure_channel(server.target) as channel,
    ):
        history = conversations_pb2_grpc.ConversationServiceStub(channel)

        def append(text: str, request_id: str) -> cv.AppendMessagesResponse:
            response: cv.AppendMessagesResponse = history.AppendMessages(
                cv.AppendMessagesRequest(
                    conversation=CONVERSATION, messages=[_message(text)], request_id=request_id
                ),
                timeout=TIMEOUT_S,
            )
            return response

        append("before", "before")
        with _admin(postgres_server) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        _end_sessions(postgres_server, name)
        for attempt in range(3):  # the first may meet an ended session; all are UNAVAILABLE
            details = error_details(_refused(lambda: append("during", "during")))
            assert details.code is grpc.StatusCode.UNAVAILABLE, (attempt, details)
            assert details.reason == "UNAVAILABLE", details
        # Reads are served by the read-only database.
        assert _eventually(lambda: _contents(history)) == ["before"]

        with _admin(postgres_server) as conn:
            conn.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        _end_sessions(postgres_server, name)
        _eventually(lambda: append("during", "during"))
        assert _eventually(lambda: _contents(history)) == ["before", "during"]
        assert server.starts == 1
        assert server.stop() == 0
    log = server.log_text()
    assert "read-only" in log and "Traceback" not in log, server.log_tail()
