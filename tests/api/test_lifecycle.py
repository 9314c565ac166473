"""``mnemo serve`` as a real process: start, one log line, graceful SIGTERM, schema refusal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy.engine import make_url

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc
from mnemo_server import __version__
from mnemo_server.store import migrate

GRACE_S = 20
START_TIMEOUT_S = 60
PASSWORD = "s3cret-pw"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _mnemo(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo_server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _wait_serving(process: subprocess.Popen[str], target: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"serve exited early: {process.communicate()}")
            try:
                response = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if response.status == SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise AssertionError("the server did not become SERVING")


@pytest.fixture
def stopper() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes to kill if a test leaves them running."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def _with_password(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return url
    return parsed.set(password=PASSWORD).render_as_string(hide_password=False)


def _fill_history(target: str, conversation: str, count: int) -> None:
    """Enough history that streaming it outlasts the transport's buffers."""
    padding = "x" * 4000
    with grpc.insecure_channel(target) as channel:
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        for start in range(0, count, 250):
            messages = [
                cv.HistoryMessage(
                    message_json=json.dumps({"role": "user", "content": f"{i} {padding}"})
                )
                for i in range(start, start + 250)
            ]
            stub.AppendMessages(
                cv.AppendMessagesRequest(conversation=conversation, messages=messages), timeout=60
            )


def _watch_health(target: str, statuses: list[int]) -> threading.Thread:
    """Record every overall health status the server sends until the stream ends."""

    def watch() -> None:
        with grpc.insecure_channel(target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                for response in stub.Watch(health_pb2.HealthCheckRequest(), timeout=120):
                    statuses.append(response.status)
            except grpc.RpcError:
                pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _wait_for(condition: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _refused(target: str) -> bool:
    with grpc.insecure_channel(target) as channel:
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        try:
            stub.GetConversation(
                cv.GetConversationRequest(name="users/u1/conversations/c1"), timeout=2
            )
        except grpc.RpcError as error:
            return error.code() is grpc.StatusCode.UNAVAILABLE
        return False


def test_sigterm_finishes_in_flight_calls_refuses_new_ones_and_exits_0(
    database_url: str, stopper: list[subprocess.Popen[str]]
) -> None:
    port = _free_port()
    target = f"127.0.0.1:{port}"
    url = _with_password(database_url)
    process = _mnemo(
        "serve",
        "--listen",
        target,
        "--database-url",
        url,
        "--grace-period-seconds",
        str(GRACE_S),
    )
    stopper.append(process)
    _wait_serving(process, target)
    conversation = "users/u1/conversations/c1"
    total = 3000
    _fill_history(target, conversation, total)

    statuses: list[int] = []
    watcher = _watch_health(target, statuses)
    _wait_for(lambda: statuses == [SERVING], "the health watch")
    with grpc.insecure_channel(target) as channel:
        stub = conversations_pb2_grpc.ConversationServiceStub(channel)
        stream = stub.StreamMessages(
            cv.StreamMessagesRequest(parent=conversation, batch_size=20), timeout=120
        )
        received = list(next(stream).messages)  # the call is in flight

        process.send_signal(signal.SIGTERM)
        _wait_for(lambda: NOT_SERVING in statuses, "health NOT_SERVING")
        _wait_for(lambda: _refused(target), "new calls to be refused")

        for batch in stream:  # the in-flight call runs to its end
            received.extend(batch.messages)
        assert stream.code() is grpc.StatusCode.OK
    assert [m.position for m in received] == list(range(total))

    _, stderr = process.communicate(timeout=GRACE_S + 30)
    assert process.returncode == 0, stderr
    watcher.join(timeout=30)
    assert statuses == [SERVING, NOT_SERVING]  # and the watch ended with the server

    lines = stderr.splitlines()
    shutdown = next(i for i, line in enumerate(lines) if "shutting down" in line)
    before_shutdown = lines[:shutdown]
    assert len(before_shutdown) == 1, stderr  # exactly one line at start
    line = before_shutdown[0]
    assert f"mnemo {__version__} serving on {target}" in line
    assert line.endswith(")")
    parsed = make_url(database_url)
    if parsed.get_backend_name() == "postgresql":
        assert f"store postgresql {parsed.host}:{parsed.port}/{parsed.database}" in line
    else:
        assert f"store sqlite {parsed.database}" in line
    assert PASSWORD not in stderr


@pytest.mark.sqlite
def test_default_sqlite_creates_its_data_dir_and_stops_on_sigint(
    tmp_path: Path, stopper: list[subprocess.Popen[str]]
) -> None:
    data_dir = tmp_path / "not" / "yet" / "there"
    port = _free_port()
    process = _mnemo(
        "serve", env={"MNEMO_DATA_DIR": str(data_dir), "MNEMO_LISTEN": f"127.0.0.1:{port}"}
    )
    stopper.append(process)
    _wait_serving(process, f"127.0.0.1:{port}")
    assert (data_dir / "mnemo.db").is_file()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=GRACE_S + 30)
    assert process.returncode == 0, stderr
    assert f"store sqlite {data_dir / 'mnemo.db'}" in stderr
    migrate.check_schema(f"sqlite:///{data_dir / 'mnemo.db'}")  # migrated at start


def test_an_unmigrated_database_is_refused_until_mnemo_migrate(
    backend: str, empty_database_url: str, stopper: list[subprocess.Popen[str]]
) -> None:
    target = f"127.0.0.1:{_free_port()}"
    # PostgreSQL never migrates itself; SQLite only when told not to.
    no_auto = ["--migrate-on-start", "false"] if backend == "sqlite" else []
    url = _with_password(empty_database_url)
    refused = _mnemo("serve", "--listen", target, "--database-url", url, *no_auto)
    stopper.append(refused)
    _, stderr = refused.communicate(timeout=60)
    assert refused.returncode == 2, stderr
    assert "mnemo migrate --database-url" in stderr
    assert PASSWORD not in stderr

    migrated = _mnemo("migrate", "--database-url", url)
    stopper.append(migrated)
    stdout, stderr = migrated.communicate(timeout=60)
    assert migrated.returncode == 0, stderr
    assert migrate.head_revision() in stdout
    migrate.check_schema(empty_database_url)


def test_version() -> None:
    process = _mnemo("version")
    stdout, _ = process.communicate(timeout=60)
    assert (process.returncode, stdout.strip()) == (0, f"mnemo {__version__}")


@pytest.mark.parametrize("command", ["serve", "migrate"])
def test_an_unreachable_database_exits_1_without_leaking_the_password(command: str) -> None:
    """At once with ``--database-wait-seconds 0`` (the wait itself:
    tests/api/test_database_wait.py)."""
    url = f"postgresql://mnemo:{PASSWORD}@127.0.0.1:{_free_port()}/mnemo"
    process = _mnemo(command, "--database-url", url, "--database-wait-seconds", "0")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "cannot be used" in stderr and "Traceback" not in stderr
    assert "does not accept connections yet" not in stderr
    assert PASSWORD not in stderr


@pytest.mark.parametrize(
    ("flag", "env"), [("--listen", "MNEMO_LISTEN"), ("--web-listen", "MNEMO_WEB_LISTEN")]
)
def test_a_port_in_use_exits_2_saying_so_and_how_to_choose_another(
    flag: str, env: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        target = f"127.0.0.1:{taken.getsockname()[1]}"
        other = "--web-listen" if flag == "--listen" else "--listen"
        process = _mnemo(
            "serve", flag, target, other, f"127.0.0.1:{_free_port()}", "--data-dir", str(tmp_path)
        )
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    (line,) = [line for line in stderr.splitlines() if "cannot listen" in line]
    assert line.endswith(
        f"cannot start: cannot listen on {target}: the address is in use (another process "
        f"listens on port {target.rpartition(':')[2]}): stop it or choose another with "
        f"{flag} HOST:PORT (or {env})"
    ), stderr
    assert "Traceback" not in stderr
    # Only Mnemo's own lines: no gRPC core log line (``E1202 ... add_port.cc``) before it.
    assert all(" mnemo" in line for line in stderr.splitlines()), stderr
