"""``make bench``: Mnemo's throughput against an empty-RPC baseline, in one run.

For each store (SQLite file, throwaway PostgreSQL cluster) and each way of
driving SQLAlchemy (``thread``: sync engine in a thread pool; ``async``: async
engine), a fresh database is migrated, a server process is started, and a load
generator in its own process drives each operation at each concurrency. The
baseline is the standard health ``Check`` RPC on the same server: the same
grpc.aio stack with no store work. Every figure is reported as a ratio to the
baseline measured in the same run, because this machine is shared and noisy.

    python bench/run.py [--seconds 3] [--backends sqlite,postgres]
                        [--runners thread,async] [--concurrency 1,16]
                        [--ops get,remember,append] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.pgcluster import ThrowawayPostgres, create_database, database_url  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_serving(target: str, timeout: float = 30.0) -> None:
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


@contextlib.contextmanager
def _server(database_url: str, runner: str) -> Iterator[str]:
    """A ``mnemo serve`` process on a free loopback port; stopped with SIGTERM."""
    target = f"127.0.0.1:{_free_port()}"
    env = dict(
        os.environ,
        MNEMO_LISTEN=target,
        MNEMO_DATABASE_URL=database_url,
        MNEMO_STORE_RUNNER=runner,
        MNEMO_LOG_LEVEL="WARNING",
    )
    process = subprocess.Popen([sys.executable, "-m", "mnemo_server", "serve"], env=env, cwd=ROOT)
    try:
        _wait_serving(target)
        yield target
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _load(target: str, op: str, concurrency: int, seconds: float) -> dict[str, Any]:
    """One load-generator process; returns its JSON figures."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.loadgen", target, op, str(concurrency), str(seconds)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _migrate(database_url: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "mnemo_server", "migrate", "--database-url", database_url],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


class _Databases:
    """Fresh, migrated databases: SQLite files in a temp dir, PostgreSQL databases
    in one throwaway cluster (started only if a PostgreSQL run is asked for)."""

    def __init__(self, stack: contextlib.ExitStack, backends: list[str]) -> None:
        self._dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemo-bench-")))
        self._postgres = (
            stack.enter_context(ThrowawayPostgres()) if "postgres" in backends else None
        )
        self._count = 0

    def fresh(self, backend: str) -> str:
        self._count += 1
        if backend == "sqlite":
            url = f"sqlite:///{self._dir / f'bench{self._count}.db'}"
        elif self._postgres is not None:
            name = f"mnemo_bench_{self._count}"
            create_database(self._postgres.url, name)
            url = database_url(self._postgres.url, name)
        else:
            raise ValueError(backend)
        _migrate(url)
        return url


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per cell")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--runners", default="thread,async")
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--ops", default="get,remember,append")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    backends = args.backends.split(",")
    runners = args.runners.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    ops = args.ops.split(",")

    rows: list[str] = []
    header = (
        "| store | runner | operation | concurrency | calls/s | ratio to baseline "
        "| p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|---|---|"
    )
    with contextlib.ExitStack() as stack:
        databases = _Databases(stack, backends)
        for runner in runners:
            for backend in backends:
                with _server(databases.fresh(backend), runner) as target:
                    for concurrency in levels:
                        base = _load(target, "baseline", concurrency, args.seconds)
                        rows.append(_row(backend, runner, base, base))
                        for op in ops:
                            rows.append(
                                _row(
                                    backend,
                                    runner,
                                    _load(target, op, concurrency, args.seconds),
                                    base,
                                )
                            )
                        print("\n".join(rows[-len(ops) - 1 :]), flush=True)
    table = "\n".join([header, *rows])
    context = (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {args.seconds:g} s per cell, "
        "load generator in its own process"
    )
    print(f"\n{context}\n\n{table}")
    if args.markdown:
        args.markdown.write_text(f"{context}\n\n{table}\n")


def _row(backend: str, runner: str, result: dict[str, Any], base: dict[str, Any]) -> str:
    name = "baseline (health Check)" if result["op"] == "baseline" else str(result["op"])
    ratio = result["throughput"] / base["throughput"] if base["throughput"] else 0.0
    return (
        f"| {backend} | {runner} | {name} | {int(result['concurrency'])} "
        f"| {result['throughput']:.0f} | {ratio:.2f} | {result['p50_ms']:.2f} "
        f"| {result['p99_ms']:.2f} | {int(result['errors'])} |"
    )


if __name__ == "__main__":
    main()
