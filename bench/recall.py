"""``make bench-recall``: RecallMemories latency over 1,000, 10,000 and
100,000 memories of one user, on SQLite and PostgreSQL.

For each backend and size: a fresh migrated database (a SQLite file; a
database in the durable throwaway PostgreSQL cluster of ``bench.servers``)
gets a real server process (``mnemo serve``), which is loaded through the
public API: one ``ImportUserData`` stream of the user's memories, realistic
short texts (``tests.support.memory_corpus``: templates over a vocabulary of
a few thousand words) each with a 64-dimension vector, in one transaction as
``mnemo import`` would load an export. Then the server answers a load-generator loop of RecallMemories calls, one at a
time: ``--queries`` lexical ones (a query text) and as many semantic ones
(the same texts with ``semantic`` and a ``query_embedding``). Each latency
is the whole call, until the stream of (up to 10) results ends. The first
semantic call of a size, which loads the user's vectors into the server's
cache, is reported apart and left out of the percentiles, as are
``--warmup`` calls of each kind before measuring.

    python bench/recall.py [--sizes 1000,10000,100000] [--backends sqlite,postgres]
                           [--queries 200] [--runner thread] [--markdown FILE]
                           [--load-only]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from bench.servers import Databases, serve  # noqa: E402
from mnemo.client import MnemoClient  # noqa: E402
from mnemo.v1 import governance_pb2, memories_pb2, memories_pb2_grpc  # noqa: E402
from tests.support.memory_corpus import Corpus  # noqa: E402

USER = "bench-user"
MODEL = "bench-random-64"
DIMENSIONS = 64
IMPORT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Cell:
    backend: str
    size: int
    mode: str
    latencies_ms: list[float]
    baseline_p50_ms: float
    first_ms: float | None = None

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms)

    def row(self) -> str:
        values = sorted(self.latencies_ms)
        p99 = values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]
        first = "" if self.first_ms is None else f"{self.first_ms:.0f}"
        return (
            f"| {self.backend} | {self.size:,} | {self.mode} | {len(values)} | {self.p50:.1f} "
            f"| {p99:.1f} | {statistics.fmean(values):.1f} "
            f"| {self.p50 / self.baseline_p50_ms:.0f}x | {first} |"
        )


HEADER = (
    "| store | memories | recall | calls | p50 ms | p99 ms | mean ms | p50 / baseline p50 "
    "| first semantic call ms (cache load) |\n|---|---|---|---|---|---|---|---|---|"
)


def _records(size: int, corpus: Corpus) -> Iterator[governance_pb2.ExportRecord]:
    now = Timestamp()
    now.GetCurrentTime()
    for n in range(size):
        yield governance_pb2.ExportRecord(
            memory=memories_pb2.Memory(
                name=f"users/{USER}/memories/m{n:07}",
                text=corpus.sentence(),
                create_time=now,
                update_time=now,
                embedding=memories_pb2.Embedding(model=MODEL, values=corpus.vector(DIMENSIONS)),
            )
        )


def _load(target: str, size: int, corpus: Corpus) -> float:
    """Import ``size`` memories of ``USER`` (one ``ImportUserData``); the seconds it took."""
    started = time.perf_counter()
    with MnemoClient(target, timeout=IMPORT_TIMEOUT_S) as client:
        client.import_user_data(USER, _records(size, corpus))
    return time.perf_counter() - started


def _requests(count: int, corpus: Corpus) -> list[str]:
    return [corpus.sentence() for _ in range(count)]


def _recall(
    stub: memories_pb2_grpc.MemoryServiceStub, text: str, vector: Sequence[float] | None
) -> float:
    request = memories_pb2.RecallMemoriesRequest(parent=f"users/{USER}", query=text)
    if vector is not None:
        request.semantic = True
        request.query_embedding.model = MODEL
        request.query_embedding.values.extend(vector)
    started = time.perf_counter()
    results = list(stub.RecallMemories(request, timeout=60))
    elapsed = (time.perf_counter() - started) * 1000
    if not results:
        raise RuntimeError(f"recall of {text!r} found nothing: is the data loaded?")
    return elapsed


def _baseline(channel: grpc.Channel, calls: int) -> list[float]:
    """Latencies of the empty health ``Check`` on the same server and channel."""
    stub = health_pb2_grpc.HealthStub(channel)
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _measure(
    target: str, backend: str, size: int, queries: int, warmup: int, corpus: Corpus
) -> list[Cell]:
    texts = _requests(queries + warmup, corpus)
    vectors = [corpus.vector(DIMENSIONS) for _ in texts]
    with grpc.insecure_channel(target) as channel:
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        baseline = _baseline(channel, queries)
        first = _recall(stub, texts[0], vectors[0])  # loads the vector cache
        for text, vector in zip(texts[:warmup], vectors[:warmup], strict=True):
            _recall(stub, text, None)
            _recall(stub, text, vector)
        lexical = [_recall(stub, t, None) for t in texts[warmup:]]
        semantic = [
            _recall(stub, t, v) for t, v in zip(texts[warmup:], vectors[warmup:], strict=True)
        ]
    base = statistics.median(baseline)
    return [
        Cell(backend, size, "baseline (health Check)", baseline, base),
        Cell(backend, size, "lexical", lexical, base),
        Cell(backend, size, "semantic (lexical + vectors, fused)", semantic, base, first),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--queries", type=int, default=200, help="measured calls per kind")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured calls per kind")
    parser.add_argument(
        "--runner", choices=["thread", "async"], help="--store-runner (default: the server's)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument(
        "--load-only", action="store_true", help="load the data, report load times, no queries"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")

    rows: list[str] = []
    loads: list[str] = []
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for backend in backends:
            for size in sizes:
                url = databases.fresh(backend)
                with serve(url, args.runner) as server:
                    seconds = _load(server.target, size, Corpus(seed=size))
                    loads.append(f"{backend} {size:,}: loaded in {seconds:.1f} s")
                    print(loads[-1], flush=True)
                    if args.load_only:
                        continue
                    cells = _measure(
                        server.target,
                        backend,
                        size,
                        args.queries,
                        args.warmup,
                        Corpus(seed=size + 1),
                    )
                rows.extend(cell.row() for cell in cells)
                print("\n".join(rows[-len(cells) :]), flush=True)
    command = "python bench/recall.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    context = (
        f"`{command.strip()}`: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, runner {args.runner or 'default'}, "
        f"{DIMENSIONS}-dimension vectors, one user, calls one at a time "
        "from a client in another process; load average at the end "
        + "/".join(f"{x:.1f}" for x in os.getloadavg())
        + " (1/5/15 min: other work on the machine skews the figures)"
    )
    table = "\n".join([HEADER, *rows]) if rows else "(load only)"
    report = f"{context}\n\n{table}\n\n" + "\n".join(f"- {line}" for line in loads)
    print(f"\n{report}")
    if args.markdown:
        args.markdown.write_text(report + "\n")


if __name__ == "__main__":
    main()
