"""``make bench-recall``: RecallMemories and BuildContext over 1,000, 10,000
and 100,000 memories of one user, on SQLite and PostgreSQL, at one call at a
time (c1) and 16 at once (c16), beside the empty RPC of the same server, and
the bulk-load rate of ``BatchCreateMemories``.

For each backend and size: a fresh migrated database (a SQLite file; a
database in the durable throwaway PostgreSQL cluster of ``bench.servers``)
gets a real server process (``mnemo serve``, default options), which loads
the user's memories through the public API: ``BatchCreateMemories`` calls of
``--batch`` entries, one after another, each with a request id; realistic
short texts (``tests.support.memory_corpus``: templates over a vocabulary of
a few thousand words), each with a vector named as the default embedder's
(bge-small-en-v1.5, 384 dimensions) but of random values: what a search
costs does not depend on the values, and embedding 100,000 texts first would
take the model most of ten minutes. The requests are built before the clock
starts; the load rate is entries per second with the server's CPU seconds per
1,000 entries.

On PostgreSQL the load is followed by ``ANALYZE`` (what autovacuum does
within a minute or so of a bulk load, and what docs/operations.md asks for
after one; ``--no-analyze`` measures the plans of a table without
statistics instead). Then the server is restarted over the same database (a
cold process: no cached vectors), and:

- the **first semantic call**, which loads the user's vectors into the
  server's cache, is timed on its own;
- **c1**: ``--queries`` calls of each kind, one at a time from a client in
  another process: the empty RPC (health ``Check``), lexical recall (a query
  text, ``semantic`` false), semantic recall (a text with ``semantic`` and a
  ``query_embedding``), *fused* recall (the text alone, the default call:
  the server embeds it with its model, ``local``, and fuses), fused recall
  of *short* queries (2-4 words), fused recall of *repeated* queries (texts
  the server embedded a moment before: its query-vector cache), and
  ``BuildContext`` lexical, semantic and fused (default budget). The
  queries are sentences of 8-16 words (``sentence_query``: what inject
  mode sends, a user's turn) unless said otherwise, and each kind has its
  own texts, so that only the *repeated* kind finds its vectors in the
  query cache. Each latency is the whole call (a recall until its stream
  of up to 10 results ends). ``--warmup`` calls of each kind come first,
  unmeasured;
- **c16**: 16 concurrent callers (``grpc.aio``, one channel) repeat each kind
  for ``--seconds``; throughput is calls completed per second, reported
  beside the empty RPC's at c16 on the same server.

Server CPU per call is the server process's CPU seconds (``/proc``, every
thread) over each c1 window divided by its calls.

    python bench/recall.py [--sizes 1000,10000,100000] [--backends sqlite,postgres]
                           [--queries 300] [--seconds 4] [--batch 1000]
                           [--modes 'recall lexical,recall fused'] [--no-c16]
                           [--markdown FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from bench.dataset import default_model, recall_batches  # noqa: E402
from bench.servers import Databases, Server, cpu_seconds, serve  # noqa: E402
from bench.shapes import sentence_query, short_query  # noqa: E402
from mnemo.v1 import memories_pb2 as mm  # noqa: E402
from mnemo.v1 import memories_pb2_grpc as mm_grpc  # noqa: E402
from tests.support.memory_corpus import Corpus  # noqa: E402

USER = "bench-user"
PARENT = f"users/{USER}"
CONCURRENCY = 16
BATCH_TIMEOUT_S = 600.0
MODES = (
    "empty",
    "recall lexical",
    "recall semantic",
    "recall fused",
    "recall fused short",
    "recall fused repeated",
    "context lexical",
    "context semantic",
    "context fused",
)


MODEL, DIMENSIONS = default_model()


@dataclass
class Cell:
    """One backend, size and mode: c1 latencies and c16 throughput."""

    backend: str
    size: int
    mode: str
    latencies_ms: list[float] = field(default_factory=list)
    server_cpu_ms: float = 0.0
    c16_per_s: float = 0.0

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class SizeReport:
    backend: str
    size: int
    load_s: float
    load_cpu_s: float
    first_semantic_ms: float
    cells: list[Cell]

    @property
    def load_rate(self) -> float:
        return self.size / self.load_s


# ---------------------------------------------------------------- requests


def _embedding(vector: Sequence[float]) -> mm.Embedding:
    return mm.Embedding(model=MODEL, values=vector)


def _load(server: Server, requests: list[mm.BatchCreateMemoriesRequest]) -> tuple[float, float]:
    """Send the batches one after another: (seconds, server CPU seconds)."""
    with grpc.insecure_channel(server.target) as channel:
        stub = mm_grpc.MemoryServiceStub(channel)
        cpu = cpu_seconds(server.pid)
        started = time.perf_counter()
        for request in requests:
            reply = stub.BatchCreateMemories(request, timeout=BATCH_TIMEOUT_S)
            if len(reply.memories) != len(request.requests):
                raise RuntimeError("a batch saved fewer entries than it sent")
        return time.perf_counter() - started, cpu_seconds(server.pid) - cpu


def _analyze(url: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.autocommit = True
        conn.execute("ANALYZE")


Query = tuple[str, list[float]]


def mode_queries(mode: str, size: int, count: int, dimensions: int) -> list[Query]:
    """``count`` queries of ``mode``: texts of their own (seeded by the mode),
    so that no kind finds its query vectors in the server's cache; the
    *repeated* kind's texts are the *fused* kind's, asked again."""
    seed = mode.removesuffix(" repeated")
    corpus = Corpus(seed=size + 1 + MODES.index(seed))
    rng = random.Random(f"{size} {seed}")
    shape = short_query if seed.endswith("short") else sentence_query
    return [(shape(corpus, rng), corpus.vector(dimensions)) for _ in range(count)]


def _request(mode: str, query: Query) -> tuple[str, Any]:
    """The method name and request of one call of ``mode``."""
    text, vector = query
    fields: dict[str, Any] = {}
    if mode.endswith("semantic"):
        fields = {"semantic": True, "query_embedding": _embedding(vector)}
    elif mode.endswith("lexical"):
        fields = {"semantic": False}
    # "fused": the text alone; the server embeds it with its model and fuses.
    # The stored vectors are random (module doc), so no hit is relevant to a
    # query: min_score 0 has every call return and fetch its hits, as a call
    # with relevant entries does (what a recall costs, whatever it keeps).
    fields["min_score"] = 0.0
    if mode.startswith("recall"):
        return "RecallMemories", mm.RecallMemoriesRequest(parent=PARENT, query=text, **fields)
    if mode.startswith("context"):
        return "BuildContext", mm.BuildContextRequest(parent=PARENT, query=text, **fields)
    return "Check", health_pb2.HealthCheckRequest()


def _checked(method: str, reply: Any) -> None:
    if method == "RecallMemories" and not reply:
        raise RuntimeError("a recall found nothing: is the data loaded?")
    if method == "BuildContext" and not reply.memories:
        raise RuntimeError("a context holds no memory: is the data loaded?")


# ---------------------------------------------------------------- c1


def _sync_call(channel: grpc.Channel) -> Callable[[str, Any], Any]:
    memories = mm_grpc.MemoryServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)

    def call(method: str, request: Any) -> Any:
        if method == "RecallMemories":
            return list(memories.RecallMemories(request, timeout=60))
        if method == "BuildContext":
            return memories.BuildContext(request, timeout=60)
        return health.Check(request, timeout=10)

    return call


def _c1(
    server: Server, cells: dict[str, Cell], queries: dict[str, list[Query]], warmup: int
) -> float:
    """Every mode's c1 latencies and server CPU; the first semantic call's ms."""
    with grpc.insecure_channel(server.target) as channel:
        call = _sync_call(channel)
        call("Check", health_pb2.HealthCheckRequest())
        method, request = _request("recall semantic", queries["recall semantic"][0])
        started = time.perf_counter()
        _checked(method, call(method, request))
        first_ms = (time.perf_counter() - started) * 1000
        for mode, cell in cells.items():
            for query in queries[mode][:warmup]:
                call(*_request(mode, query))
            requests = [_request(mode, q) for q in queries[mode][warmup:]]
            if mode.endswith("repeated"):  # embedded a moment before: from the query cache
                for method, request in requests:
                    call(method, request)
            cpu = cpu_seconds(server.pid)
            for method, request in requests:
                started = time.perf_counter()
                reply = call(method, request)
                cell.latencies_ms.append((time.perf_counter() - started) * 1000)
                _checked(method, reply)
            cell.server_cpu_ms = (cpu_seconds(server.pid) - cpu) * 1000 / len(requests)
    return first_ms


# ---------------------------------------------------------------- c16


async def _c16_mode(
    channel: grpc.aio.Channel, mode: str, queries: list[Query], seconds: float
) -> float:
    memories = mm_grpc.MemoryServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    completed = 0
    deadline = time.perf_counter() + seconds

    async def caller(worker: int) -> None:
        nonlocal completed
        n = worker
        while time.perf_counter() < deadline:
            method, request = _request(mode, queries[n % len(queries)])
            n += CONCURRENCY
            if method == "RecallMemories":
                reply: Any = [r async for r in memories.RecallMemories(request, timeout=60)]
            elif method == "BuildContext":
                reply = await memories.BuildContext(request, timeout=60)
            else:
                reply = await health.Check(request, timeout=10)
            _checked(method, reply)
            completed += 1

    started = time.perf_counter()
    await asyncio.gather(*(caller(w) for w in range(CONCURRENCY)))
    return completed / (time.perf_counter() - started)


async def _c16(
    server: Server, cells: dict[str, Cell], queries: dict[str, list[Query]], seconds: float
) -> None:
    async with grpc.aio.insecure_channel(server.target) as channel:
        for mode, cell in cells.items():
            await _c16_mode(channel, mode, queries[mode], min(1.0, seconds))  # warm-up
            cell.c16_per_s = await _c16_mode(channel, mode, queries[mode], seconds)


C16_QUERIES = 2000
"""Distinct texts per kind at c16: more than the server's query cache
holds (1,024), so that cycling through them finds no vector there."""


def _c16_queries(
    modes: Sequence[str], size: int, c1: dict[str, list[Query]]
) -> dict[str, list[Query]]:
    """Texts of their own for c16 (those of c1 are in the query cache by
    then); the *repeated* kind repeats c1's."""
    return {
        mode: c1[mode]
        if mode.endswith("repeated")
        else mode_queries(mode, size + 1_000_000, C16_QUERIES, DIMENSIONS)
        for mode in modes
    }


# ---------------------------------------------------------------- report


def _markdown(reports: list[SizeReport], context: str) -> str:
    lines = [
        context,
        "",
        "| store | memories | call | c1 p50 ms | c1 p99 ms | p50 / empty | server CPU ms/call "
        "| c16 calls/s | c16 / empty c16 |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for report in reports:
        empty = next(c for c in report.cells if c.mode == "empty")
        for cell in report.cells:
            c16 = (
                f"{cell.c16_per_s:,.0f} | {cell.c16_per_s / empty.c16_per_s:.2f}"
                if empty.c16_per_s
                else "- | -"
            )
            lines.append(
                f"| {report.backend} | {report.size:,} | {cell.mode} | {cell.percentile(0.5):.1f} "
                f"| {cell.percentile(0.99):.1f} "
                f"| {cell.percentile(0.5) / empty.percentile(0.5):.1f}x "
                f"| {cell.server_cpu_ms:.2f} | {c16} |"
            )
    lines += [
        "",
        "| store | memories | bulk load (BatchCreateMemories) entries/s | server CPU s per 1,000 "
        "| first semantic call ms (vector cache load) |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.backend} | {r.size:,} | {r.load_rate:,.0f} | {r.load_cpu_s * 1000 / r.size:.2f} "
        f"| {r.first_semantic_ms:.0f} |"
        for r in reports
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--queries", type=int, default=300, help="measured c1 calls per kind")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured c1 calls per kind")
    parser.add_argument("--seconds", type=float, default=4.0, help="c16 window per kind")
    parser.add_argument("--batch", type=int, default=1000, help="entries per BatchCreateMemories")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument(
        "--no-analyze", action="store_true", help="PostgreSQL: no ANALYZE after the load"
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"kinds of call, comma-separated (default all: {','.join(MODES)})",
    )
    parser.add_argument("--no-c16", action="store_true", help="c1 only")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown modes {sorted(unknown)}")
    if "empty" not in modes:
        modes.insert(0, "empty")  # every other kind is shown beside it
    if "recall fused repeated" in modes and "recall fused" not in modes:
        parser.error("recall fused repeated repeats the texts of recall fused: select both")
    modes.sort(key=MODES.index)
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")

    reports: list[SizeReport] = []
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for backend in backends:
            for size in sizes:
                url = databases.fresh(backend)
                batches = recall_batches(USER, size, args.batch, MODEL, DIMENSIONS, seed=size)
                with serve(url) as server:
                    load_s, load_cpu_s = _load(server, batches)
                del batches
                if backend == "postgres" and not args.no_analyze:
                    _analyze(url)
                print(f"{backend} {size:,}: loaded in {load_s:.1f} s", flush=True)
                count = args.queries + args.warmup
                queries = {
                    mode: mode_queries(mode, size, count, DIMENSIONS)
                    for mode in {*modes, "recall semantic"}
                }
                cells = {mode: Cell(backend, size, mode) for mode in modes}
                with serve(url) as server:  # cold: nothing cached
                    first_ms = _c1(server, cells, queries, args.warmup)
                    if not args.no_c16:
                        c16 = _c16_queries(modes, size, queries)
                        asyncio.run(_c16(server, cells, c16, args.seconds))
                    server.check()
                report = SizeReport(
                    backend, size, load_s, load_cpu_s, first_ms, list(cells.values())
                )
                reports.append(report)
                print(_markdown([report], ""), flush=True)
    command = "python bench/recall.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    context = (
        f"`{command.strip()}`: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{DIMENSIONS}-dimension vectors, one user; c1: {args.queries} calls per kind from a "
        f"client in another process; c16: {CONCURRENCY} concurrent callers for {args.seconds:g} s "
        "per kind; load average at the end "
        + "/".join(f"{x:.1f}" for x in os.getloadavg())
        + " (1/5/15 min: other work on the machine skews the figures)"
    )
    text = _markdown(reports, context)
    print(f"\n{text}")
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in reports], indent=1) + "\n")


if __name__ == "__main__":
    main()
