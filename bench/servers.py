"""Server processes and databases for the benchmarks, through the ``mnemo`` CLI only.

- ``Databases``: fresh, migrated databases (``mnemo migrate``): SQLite files in a
  temporary directory; PostgreSQL databases in one throwaway cluster that is
  durable like production (``fsync``, ``synchronous_commit`` and
  ``full_page_writes`` on).
- ``Databases`` also gives databases of a throwaway Citus cluster (a
  coordinator and two workers, durable alike; store ``citus``): migrated and
  distributed by ``mnemo migrate --distribute``, with Citus's default shard
  count. Citus is not part of the repository: ``MNEMO_TEST_CITUS_BINDIR``
  names a PostgreSQL ``bin`` directory with Citus installed
  (``tests.support.citus``).
- ``serve``: a ``mnemo serve`` process on a free 127.0.0.1 port, stopped with
  SIGTERM.
- ``cpu_seconds`` / ``rss_bytes``: a process's CPU time (user + system, all
  threads, from ``/proc/PID/stat``) and resident set size (``/proc/PID/status``).

Nothing here imports ``mnemo_server``: the benchmarks talk to Mnemo as a user
does, so they survive any rewrite of the server's internals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.pgcluster import ThrowawayPostgres, create_database, database_url

ROOT = Path(__file__).resolve().parent.parent

# Production-like durability for the benchmark cluster (the test default turns it off).
DURABLE_POSTGRES: Mapping[str, str] = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
}
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (every thread, and
    the threads that already ended)."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may hold spaces; the fields after ")" are fixed.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def wait_serving(target: str, timeout: float = 60.0) -> None:
    """Wait until the health service of ``target`` answers SERVING."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise RuntimeError(f"server at {target} did not become SERVING")


@dataclass(frozen=True)
class Server:
    """A running ``mnemo serve`` process."""

    target: str
    pid: int
    process: subprocess.Popen[bytes]

    log: Path

    def check(self) -> None:
        """Raise ``ServerExited`` if the process has ended."""
        if (code := self.process.poll()) is not None:
            raise ServerExited(self, code)


class ServerExited(RuntimeError):
    """A server ended while the benchmark still used it (a negative code is
    the signal that ended it); the message carries the end of its log."""

    def __init__(self, server: Server, code: int) -> None:
        tail = server.log.read_text(errors="replace")[-800:] if server.log.exists() else ""
        super().__init__(
            f"the server {server.target} ended while the benchmark used it ({code}); its log ends: {tail!r}"
        )


@contextlib.contextmanager
def serve(
    url: str, runner: str | None = None, extra_env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """A ``mnemo serve`` process over ``url`` on a free loopback port (default
    options, ``--store-runner`` only when ``runner`` is given; its log, at INFO, which logs no request, in a file of its own,
    deleted unless the server ended by itself); SIGTERM on exit."""
    target = f"127.0.0.1:{free_port()}"
    env = dict(
        os.environ,
        MNEMO_LISTEN=target,
        MNEMO_DATABASE_URL=url,
        MNEMO_LOG_LEVEL="INFO",
        **({"MNEMO_STORE_RUNNER": runner} if runner else {}),
        **(extra_env or {}),
    )
    descriptor, name = tempfile.mkstemp(prefix="mnemo-bench-server-", suffix=".log")
    with os.fdopen(descriptor, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mnemo_server", "serve"],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Server(target, process.pid, process, Path(name))
    try:
        wait_serving(target)
        yield server
    finally:
        if (early := process.poll()) is not None:
            print(f"bench: {ServerExited(server, early)}", file=sys.stderr)
        else:
            server.log.unlink(missing_ok=True)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def migrate(url: str) -> None:
    """``mnemo migrate`` of a fresh database."""
    subprocess.run(
        [sys.executable, "-m", "mnemo_server", "migrate", "--database-url", url],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


class Databases:
    """Fresh, migrated databases: SQLite files in a temporary directory,
    PostgreSQL databases in one durable throwaway cluster (started only if a
    PostgreSQL database is asked for)."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self.dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemo-bench-")))
        self._postgres: ThrowawayPostgres | None = None
        self._citus: Any = None  # a tests.support.citus.CitusCluster, once started
        self._count = 0

    @property
    def postgres(self) -> ThrowawayPostgres:
        """The cluster, started on first use."""
        if self._postgres is None:
            self._postgres = self._stack.enter_context(ThrowawayPostgres(settings=DURABLE_POSTGRES))
        return self._postgres

    @property
    def citus(self) -> Any:
        """The Citus cluster (a ``tests.support.citus.CitusCluster``: a
        coordinator and two workers), started on first use."""
        if self._citus is None:
            from tests.support.citus import CitusCluster  # only a Citus run needs it

            self._citus = self._stack.enter_context(CitusCluster(settings=DURABLE_POSTGRES))
        return self._citus

    def fresh_name(self, prefix: str = "bench") -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def raw(self, backend: str, prefix: str = "bench") -> str:
        """A new empty database (not migrated): its SQLAlchemy URL."""
        name = self.fresh_name(prefix)
        if backend == "sqlite":
            return f"sqlite:///{self.dir / f'{name}.db'}"
        if backend == "postgres":
            create_database(self.postgres.url, name)
            return database_url(self.postgres.url, name)
        if backend == "citus":
            url: str = self.citus.create_database(name)
            return url
        raise ValueError(f"unknown backend {backend!r}")

    def fresh(self, backend: str) -> str:
        """A new database migrated by ``mnemo migrate``: its SQLAlchemy URL."""
        url = self.raw(backend)
        if backend == "citus":  # Citus's default shard count, as an operator's
            self.citus.migrate_and_distribute(url.rsplit("/", 1)[1], shard_count=32)
        else:
            migrate(url)
        return url
