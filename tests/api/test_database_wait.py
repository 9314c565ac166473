"""``mnemo serve`` and ``mnemo migrate`` wait for a PostgreSQL that is not up
yet (``--database-wait-seconds``, ``MNEMO_DATABASE_WAIT_SECONDS``), as real
processes on 127.0.0.1: the server comes up once a throwaway cluster starts
on the port it was told; when the wait runs out, the exit is the one line of
an unreachable database (exit 1); what a reachable server refuses (an unknown
role, a missing database, an empty schema) is answered at once, not waited for.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from mnemo_server.store import migrate
from tests.support.databases import PostgresDatabases
from tests.support.mnemo_command import run_mnemo
from tests.support.pgcluster import URL_ENV, ThrowawayPostgres
from tests.support.subprocess_server import SubprocessServer

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

WAITING = "does not accept connections yet ("
PASSWORD = "s3cret-pw"
SEEN_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SEEN_S
    while not predicate():
        assert time.monotonic() < deadline, f"not within {SEEN_S}s: {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[tuple[ThrowawayPostgres, PostgresDatabases]]:
    """A cluster this module stops and starts again (never the shared one)."""
    if os.environ.get(URL_ENV):
        pytest.skip(f"stops and starts its own PostgreSQL cluster, which ${URL_ENV} replaces")
    with ThrowawayPostgres() as cluster:
        databases = PostgresDatabases(cluster.url)
        yield cluster, databases
        databases.close()


@pytest.fixture
def stopped(own_cluster: tuple[ThrowawayPostgres, PostgresDatabases]) -> Iterator[str]:
    """The URL of an empty database on the module's cluster, which is stopped:
    its 127.0.0.1 port has no listener until the test starts it again."""
    cluster, databases = own_cluster
    url = databases.empty()
    cluster.shut_down()
    try:
        yield url
    finally:
        if not _accepts(cluster):
            cluster.start_again()
        databases.drop(url)


def _accepts(cluster: ThrowawayPostgres) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", cluster.port or 0)) == 0


def test_migrate_waits_for_postgresql_to_start(
    own_cluster: tuple[ThrowawayPostgres, PostgresDatabases], stopped: str
) -> None:
    cluster = own_cluster[0]
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemo_server", "migrate", "--database-url", stopped],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MNEMO_DATABASE_WAIT_SECONDS": "90"},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the one line saying it waits, while it waits
        assert WAITING in line and "up to 90s" in line, line
        assert process.poll() is None
        cluster.start_again()
        stdout, stderr = process.communicate(timeout=SEEN_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert migrate.head_revision() in stdout
    assert WAITING not in stderr  # said once
    migrate.check_schema(stopped)


def test_serve_waits_for_postgresql_to_start(
    own_cluster: tuple[ThrowawayPostgres, PostgresDatabases], stopped: str, tmp_path: Path
) -> None:
    cluster = own_cluster[0]
    server = SubprocessServer(
        stopped,
        tmp_path,
        ("--database-wait-seconds", "90", "--migrate-on-start", "true", "--embedder", "none"),
    )
    failure: list[BaseException] = []

    def start() -> None:
        try:
            server.start()
        except BaseException as error:  # reported by the test
            failure.append(error)

    starting = threading.Thread(target=start)
    starting.start()
    try:
        _until(lambda: WAITING in server.log_text(), "the waiting line")
        time.sleep(1.5)  # some retries find nothing listening yet
        assert server.is_running() and " serving on " not in server.log_text()
        cluster.start_again()
        starting.join(SEEN_S)
        assert not failure, failure
        assert " serving on " in server.log_text()
        assert server.stop() == 0
    finally:
        server.close()
        starting.join(SEEN_S)
    log = server.log_text()
    assert log.count(WAITING) == 1, log
    assert "Traceback" not in log


@pytest.mark.parametrize(("command", "by_env"), [("serve", False), ("migrate", True)])
def test_when_the_wait_runs_out_the_exit_is_one_line(
    command: str, by_env: bool, tmp_path: Path
) -> None:
    url = f"postgresql://mnemo:{PASSWORD}@127.0.0.1:{_free_port()}/mnemo"
    args = [command, "--database-url", url]
    env = {"MNEMO_DATABASE_WAIT_SECONDS": "3"} if by_env else {}
    if not by_env:
        args += ["--database-wait-seconds", "3"]
    if command == "serve":
        args += ["--listen", f"127.0.0.1:{_free_port()}", "--embedder", "none"]
    began = time.monotonic()
    ended = run_mnemo(*args, env=env, timeout=SEEN_S)
    took = time.monotonic() - began
    assert ended.returncode == 1, ended.stderr
    lines = ended.stderr.splitlines()
    assert len(lines) == 2, ended.stderr  # waiting, then the one line of the failure
    assert WAITING in lines[0] and "up to 3s" in lines[0]
    assert "cannot be used: connection failed" in lines[1]
    assert lines[1].endswith("Is the server running on that host and accepting TCP/IP connections?")
    assert PASSWORD not in ended.stderr
    assert 3 <= took < 3 + 20, took


def test_what_a_running_server_refuses_is_not_waited_for(
    own_cluster: tuple[ThrowawayPostgres, PostgresDatabases], tmp_path: Path
) -> None:
    cluster, databases = own_cluster
    if not _accepts(cluster):
        cluster.start_again()
    empty = databases.empty()
    try:
        base = make_url(empty)
        refused = {
            "unknown role": base.set(username="nobody").render_as_string(hide_password=False),
            "missing database": base.set(database="nope").render_as_string(hide_password=False),
        }
        for what, url in refused.items():
            for command in ("serve", "migrate"):
                began = time.monotonic()
                ended = _run(command, url)
                took = time.monotonic() - began
                assert ended.returncode == 1, (what, command, ended.stderr)
                assert WAITING not in ended.stderr, (what, command, ended.stderr)
                assert "cannot be used" in ended.stderr
                assert took < 20, (what, command, took)
        began = time.monotonic()
        schema = _run("serve", empty)
        assert schema.returncode == 2, schema.stderr
        assert "mnemo migrate --database-url" in schema.stderr
        assert WAITING not in schema.stderr and time.monotonic() - began < 20
    finally:
        databases.drop(empty)


def _run(command: str, url: str) -> subprocess.CompletedProcess[str]:
    """``command`` on ``url`` with the default wait (60 s)."""
    args = [command, "--database-url", url]
    if command == "serve":
        args += ["--listen", f"127.0.0.1:{_free_port()}", "--embedder", "none"]
    return run_mnemo(*args, timeout=SEEN_S)
