"""Bulk loading through ``BatchCreateMemories``: entries per second on SQLite
and PostgreSQL.

For each backend: a fresh migrated database gets a real server process
(``mnemo serve``, default options; PostgreSQL in the durable throwaway
cluster of ``bench.servers``), and one client sends ``--count`` memories of
one user sequentially in batches of ``--batch`` (1,000, the maximum): short
texts (``tests.support.memory_corpus``) each with a client-computed
64-dimension vector, and a request id per batch. The requests are built
before the clock starts, so the figure is what the server sustains; the
server's CPU time (every thread, ``/proc``) is reported beside it. With
``--import``, ``mnemo import --memories`` then loads the same entries from a
JSON Lines file into another fresh database (and server), timed end to end
(the command's start, reading the file twice and building the requests
included). ``make bench-bulk`` runs both.

``measure(backend, count, batch)`` is the load as a function (for
``bench/recall.py`` and others): a dict of ``entries_per_s``,
``server_cpu_s`` and the rest; ``describe`` turns it into a line.

    python bench/bulk_load.py [--count 100000] [--batch 1000]
                              [--backends sqlite,postgres] [--import]
                              [--profile DIR [--gil]]

``--profile DIR`` samples the server with ``py-spy record`` (from
``.venv-bench``) while the batches load: ``DIR/bulk-load-BACKEND.txt``,
collapsed stacks (``flamegraph.pl`` draws them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.servers import Databases, cpu_seconds, serve  # noqa: E402
from mnemo.v1 import memories_pb2, memories_pb2_grpc  # noqa: E402
from tests.support.memory_corpus import Corpus  # noqa: E402

USER = "bulk-user"
MODEL = "bench-random-64"
DIMENSIONS = 64
CALL_TIMEOUT_S = 600.0
PY_SPY = ROOT / ".venv-bench" / "bin" / "py-spy"


def _entries(count: int, corpus: Corpus) -> list[memories_pb2.Memory]:
    return [
        memories_pb2.Memory(
            text=corpus.sentence(),
            embedding=memories_pb2.Embedding(model=MODEL, values=corpus.vector(DIMENSIONS)),
        )
        for _ in range(count)
    ]


def _batches(
    user: str, entries: list[memories_pb2.Memory], size: int
) -> list[memories_pb2.BatchCreateMemoriesRequest]:
    return [
        memories_pb2.BatchCreateMemoriesRequest(
            parent=f"users/{user}",
            requests=[memories_pb2.CreateMemoryRequest(memory=m) for m in entries[i : i + size]],
            request_id=f"bulk-{user}-{i}",
        )
        for i in range(0, len(entries), size)
    ]


def _load(
    target: str, pid: int, batches: list[memories_pb2.BatchCreateMemoriesRequest]
) -> dict[str, float]:
    """Send the batches one after the other; the figures."""
    latencies: list[float] = []
    entries = sum(len(b.requests) for b in batches)
    options = [("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(target, options=options) as channel:
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        cpu_before, started = cpu_seconds(pid), time.perf_counter()
        for request in batches:
            call_started = time.perf_counter()
            stub.BatchCreateMemories(request, timeout=CALL_TIMEOUT_S)
            latencies.append(time.perf_counter() - call_started)
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu_before
    return {
        "seconds": seconds,
        "entries_per_s": entries / seconds,
        "batch_p50_ms": statistics.median(latencies) * 1000,
        "batch_max_ms": max(latencies) * 1000,
        "server_cpu_s": cpu,
        "server_cpu_us_per_entry": cpu / entries * 1e6,
    }


def describe(result: dict[str, Any]) -> str:
    """A line of ``measure``'s figures."""
    return (
        f"{result['backend']}: {result['entries']:,} entries in batches of {result['batch']:,} "
        f"in {result['seconds']:.1f} s: {result['entries_per_s']:,.0f} entries/s; per batch "
        f"p50 {result['batch_p50_ms']:.0f} ms, max {result['batch_max_ms']:.0f} ms; server CPU "
        f"{result['server_cpu_s']:.1f} s ({result['server_cpu_us_per_entry']:.0f} us per entry)"
    )


def measure(
    backend: str,
    count: int = 100_000,
    batch: int = 1000,
    *,
    databases: Databases | None = None,
    profile: Path | None = None,
    gil: bool = False,
    py_spy: str = str(PY_SPY),
) -> dict[str, Any]:
    """Load ``count`` entries in batches of ``batch`` into a fresh database of
    ``backend`` (``sqlite`` or ``postgres``) through a new server; the
    figures: ``entries_per_s``, ``seconds``, ``batch_p50_ms``,
    ``batch_max_ms``, ``server_cpu_s``, ``server_cpu_us_per_entry`` (and
    ``backend``, ``entries``, ``batch``). ``databases``: where to make the
    database (else a temporary one, and a PostgreSQL cluster of its own);
    ``profile``: a file for ``py-spy record`` of the server."""
    batches = _batches(USER, _entries(count, Corpus(seed=count)), batch)
    with contextlib.ExitStack() as stack:
        if databases is None:
            databases = Databases(stack)
        with serve(databases.fresh(backend)) as server, _profiled(server.pid, profile, gil, py_spy):
            figures = _load(server.target, server.pid, batches)
    return {"backend": backend, "entries": count, "batch": batch, **figures}


def _import(target: str, pid: int, entries: list[memories_pb2.Memory], batch: int) -> str:
    """``mnemo import --memories`` of the entries (a JSON Lines file); a line of figures."""
    from google.protobuf import json_format

    with tempfile.TemporaryDirectory(prefix="mnemo-bulk-") as directory:
        path = Path(directory) / "memories.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for memory in entries:
                out.write(json.dumps(json_format.MessageToDict(memory)) + "\n")
        command = [sys.executable, "-m", "mnemo_server", "import", "--user", f"{USER}-import"]
        command += ["--memories", str(path), "--batch-size", str(batch), "--target", target]
        cpu_before, started = cpu_seconds(pid), time.perf_counter()
        subprocess.run(command, check=True, cwd=ROOT, capture_output=True)
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu_before
    return (
        f"mnemo import --memories: {len(entries):,} entries in {seconds:.1f} s: "
        f"{len(entries) / seconds:,.0f} entries/s (server CPU {cpu:.1f} s)"
    )


@contextlib.contextmanager
def _profiled(pid: int, output: Path | None, gil: bool, py_spy: str) -> Iterator[None]:
    """``py-spy record`` of process ``pid`` into ``output`` (nothing without one)."""
    if output is None:
        yield
        return
    if not Path(py_spy).exists():
        raise SystemExit(f"{py_spy} not found: `make bench-venv` installs it (.venv-bench)")
    command = [py_spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "200"]
    command += ["--output", str(output), *(["--gil"] if gil else [])]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        spy.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--import",
        dest="run_import",
        action="store_true",
        help="also time mnemo import --memories",
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy the server here")
    parser.add_argument("--gil", action="store_true", help="profile only the GIL holder")
    parser.add_argument("--py-spy", default=str(PY_SPY), help="the py-spy executable")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for backend in args.backends.split(","):
            output = args.profile / f"bulk-load-{backend}.txt" if args.profile else None
            result = measure(
                backend,
                args.count,
                args.batch,
                databases=databases,
                profile=output,
                gil=args.gil,
                py_spy=args.py_spy,
            )
            print(describe(result), flush=True)
            if args.run_import:
                entries = _entries(args.count, Corpus(seed=args.count))
                with serve(databases.fresh(backend)) as server:
                    line = _import(server.target, server.pid, entries, args.batch)
                print(f"{backend}: {line}", flush=True)


if __name__ == "__main__":
    main()
