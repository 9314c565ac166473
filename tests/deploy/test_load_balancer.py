"""Three ``mnemo serve`` processes on one PostgreSQL database behind a real
gRPC load balancer (nginx, ``tests.support.grpc_balancer``, the configuration
of ``docs/operations.md``): calls spread over all three, a watch on one
process sees the writes made through the others, and a process killed under
load loses no acknowledged write (the client retries ``UNAVAILABLE`` with the
same request id; nginx passes calls that cannot reach a process on to the
next one)."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from mnemo.client import MnemoClient
from mnemo.client.errors import MnemoError
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc
from tests.api.changes import PARENT, USER, Watch, cursors
from tests.support.databases import PostgresDatabases
from tests.support.grpc_balancer import (
    UPSTREAM_HEADER,
    GrpcBalancer,
    directives,
    grpc_balancer,
    nginx_config,
)
from tests.support.subprocess_server import SubprocessServer

PROCESSES = 3
# Heartbeats far apart: a change must reach a watch by its notice (LISTEN/NOTIFY
# from whichever process wrote it), not by the re-read at each heartbeat.
SLOW_HEARTBEAT = ("--watch-heartbeat-seconds", "600")
WRITERS = 4
PAUSING_WRITERS = 2
WRITES_PER_WRITER = 24
WAIT_S = 30.0
LOADED_USER = "loaded"


@dataclass
class Deployment:
    servers: list[SubprocessServer]
    balancer: GrpcBalancer


@pytest.fixture(scope="module")
def deployment(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """The three processes and nginx, shared by the tests of this module (each
    test its own user); the kill test comes last."""
    tmp_path = tmp_path_factory.mktemp("deployment")
    url = postgres_databases.fresh()
    servers = [
        SubprocessServer(url, tmp_path / f"server-{n}", SLOW_HEARTBEAT) for n in range(PROCESSES)
    ]
    try:
        with ExitStack() as stack:
            for server in servers:
                server.log_dir.mkdir()
                stack.callback(server.close)
            with ThreadPoolExecutor(PROCESSES) as pool:
                list(pool.map(SubprocessServer.start, servers))
            balancer = stack.enter_context(
                grpc_balancer([server.target for server in servers], tmp_path / "nginx")
            )
            yield Deployment(servers, balancer)
            logs = "".join(server.log_text() for server in servers)
            assert "Traceback" not in logs
    finally:
        postgres_databases.drop(url)


def _create(stub: memories_pb2_grpc.MemoryServiceStub, n: int) -> tuple[int, str]:
    """One CreateMemory through the balancer: its change cursor and the
    upstream nginx says served it."""
    response, call = stub.CreateMemory.with_call(
        mm.CreateMemoryRequest(
            parent=PARENT, memory=mm.Memory(text=f"spread {n}"), request_id=f"spread-{n}"
        ),
        timeout=WAIT_S,
    )
    return response.change_cursor, _served_by(call)


def _served_by(call: grpc.Call) -> str:
    """The process that served ``call``, by nginx's header (the last one it
    tried, when a process it tried first refused the connection)."""
    tried = str(dict(call.initial_metadata())[UPSTREAM_HEADER])
    return tried.split(", ")[-1]


@pytest.mark.postgres
def test_calls_spread_over_every_process_and_a_watch_sees_the_others_writes(
    deployment: Deployment,
) -> None:
    targets = {server.target for server in deployment.servers}
    watched = deployment.servers[0]
    direct = Watch(watched.target)
    through_balancer = Watch(deployment.balancer.target)
    try:
        assert direct.changes_until_heartbeat() == through_balancer.changes_until_heartbeat() == []
        with grpc.insecure_channel(deployment.balancer.target) as channel:
            stub = memories_pb2_grpc.MemoryServiceStub(channel)
            written = [_create(stub, n) for n in range(2 * PROCESSES)]
        served_by = Counter(upstream for _, upstream in written)
        # Round robin: every process served two of the writes.
        assert served_by == dict.fromkeys(targets, 2)
        # The watch on the first process sees the writes the other two served
        # too, and so does the one nginx placed on any of them.
        expected = [cursor for cursor, _ in written]
        for watch in (direct, through_balancer):
            assert cursors(watch.changes_until(expected[-1])) == expected
    finally:
        direct.close()
        through_balancer.close()


@dataclass
class WriterResult:
    acknowledged: list[str]
    failures: list[str]


def _writer(target: str, writer: int, halfway: Callable[[], object] = lambda: None) -> WriterResult:
    """``WRITES_PER_WRITER`` CreateMemory calls with request ids, calling
    ``halfway`` between the two halves."""
    result = WriterResult([], [])
    with MnemoClient(target, timeout=WAIT_S) as client:
        for n in range(WRITES_PER_WRITER):
            if n == WRITES_PER_WRITER // 2:
                halfway()
            text = f"load {writer} {n}"
            try:
                client.create_memory(LOADED_USER, text, request_id=f"load-{writer}-{n}")
            except MnemoError as error:
                result.failures.append(f"{text}: {error}")
            else:
                result.acknowledged.append(text)
    return result


@pytest.mark.postgres
def test_a_process_killed_under_load_loses_no_acknowledged_write(deployment: Deployment) -> None:
    victim = deployment.servers[1]
    before = len(deployment.balancer.access_lines())
    # Some writers pause halfway until the kill is done (their second halves
    # run wholly after it); the others write through it.
    paused, killed = threading.Barrier(PAUSING_WRITERS + 1), threading.Event()

    def until_killed() -> bool:
        paused.wait(WAIT_S)
        return killed.wait(WAIT_S)

    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [
            pool.submit(_writer, deployment.balancer.target, writer, until_killed)
            if writer < PAUSING_WRITERS
            else pool.submit(_writer, deployment.balancer.target, writer)
            for writer in range(WRITERS)
        ]
        paused.wait(WAIT_S)
        # SIGKILL while the other writers' calls run, some of them on the victim.
        victim.kill()
        killed.set()
        results = [future.result() for future in futures]

    assert [failure for result in results for failure in result.failures] == []
    sent = [text for result in results for text in result.acknowledged]
    assert len(sent) == WRITERS * WRITES_PER_WRITER
    with MnemoClient(deployment.balancer.target, timeout=WAIT_S) as client:
        stored = Counter(memory.text for memory in client.list_memories(LOADED_USER))
    # Every acknowledged write exactly once, and nothing else.
    assert stored == Counter(sent)
    # The victim had its share of this load before the kill. (One nginx
    # worker writes a call's log line before it reads the next call, so every
    # CreateMemory is in the log once ListMemories has answered.)
    served = Counter(
        row[0]
        for row in deployment.balancer.access_lines()[before:]
        if row[3].endswith("/CreateMemory")
    )
    assert served[victim.target] > 0


@pytest.mark.postgres
def test_a_drained_process_ends_its_watches_with_ok_while_calls_go_on(
    deployment: Deployment,
) -> None:
    """SIGTERM (a drain, after the kill above): the process's watches end
    with OK (their clients resume elsewhere), the others' stay open, and
    calls through the balancer go on without an error."""
    drained, survivor = deployment.servers[2], deployment.servers[0]
    with MnemoClient(deployment.balancer.target, timeout=WAIT_S) as client:
        latest = client.list_changes(USER).latest_cursor
    watches = [Watch(deployment.balancer.target, after_cursor=latest) for _ in range(4)]
    try:
        placed = [_served_by(w.call) for w in watches]
        on_drained = [w for w, at in zip(watches, placed, strict=True) if at == drained.target]
        elsewhere = [w for w, at in zip(watches, placed, strict=True) if at == survivor.target]
        assert on_drained and elsewhere and len(on_drained) + len(elsewhere) == len(watches)
        for watch in watches:
            assert watch.changes_until_heartbeat() == []
        with ThreadPoolExecutor(1) as pool:
            during = pool.submit(_writer, deployment.balancer.target, WRITERS)
            drained.terminate()
            for watch in on_drained:
                assert watch.next() is None  # the end of the stream with OK
            assert drained.wait() == 0
            result = during.result()
        assert result.failures == []
        with MnemoClient(deployment.balancer.target, timeout=WAIT_S) as client:
            after = client.create_memory(USER, "after the drain")
        for watch in elsewhere:
            assert watch.changes_until(after.change_cursor)[-1].cursor == after.change_cursor
    finally:
        for watch in watches:
            watch.close()


def test_the_documented_configuration_is_the_tested_one(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    block = re.search(r"```nginx\n(.*?)```", doc, re.DOTALL)
    assert block is not None, "docs/operations.md has no nginx configuration block"
    documented = [d for d in directives(block.group(1)) if not d.startswith("server 10.")]
    tested = directives(nginx_config(1, ["127.0.0.1:2"], tmp_path))
    assert documented == tested
