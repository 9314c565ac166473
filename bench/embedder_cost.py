"""What the default embedder costs a server: CreateMemory and RecallMemories
at concurrency 1, ``--embedder none`` beside ``--embedder local`` in the same
run,
with the server's CPU per call, latency and RSS. SQLite, 600 saves of short
facts, 400 recalls (half of them repeated queries, which the query-vector
cache answers).

    python bench/embedder_cost.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.servers import Databases, cpu_seconds, rss_bytes, serve  # noqa: E402
from mnemo.client import MnemoClient  # noqa: E402

VERBS = ("likes", "visited", "booked", "painted")
PLACES = ("museum", "cafe", "boat", "garden", "library")
NEAR = ("river", "station", "market", "school", "harbour")
TEXTS = [
    f"Ada mentioned on day {i} that she {verb} the {place} near the {near}."
    for i, (verb, place, near) in enumerate(
        [(v, p, n) for v in VERBS for p in PLACES for n in NEAR] * 6
    )
]
QUERIES = ("where did she go near the river?", "what did Ada book?", "museum visits")
RECALLS = 400


def _measure(embedder: str, databases: Databases) -> str:
    url = databases.fresh("sqlite")
    with serve(url, extra_env={"MNEMO_EMBEDDER": embedder}) as server:
        pid = server.process.pid
        with MnemoClient(server.target, timeout=60) as client:
            for text in TEXTS[:20]:
                client.create_memory("warm", text)
            started, latencies = cpu_seconds(pid), []
            for text in TEXTS:
                begun = time.perf_counter()
                client.create_memory("u", text)
                latencies.append(time.perf_counter() - begun)
            create_cpu = (cpu_seconds(pid) - started) / len(TEXTS) * 1000
            create_p50 = statistics.median(latencies) * 1000
            started, latencies = cpu_seconds(pid), []
            for i in range(RECALLS):
                query = QUERIES[i % len(QUERIES)] + ("" if i % 2 else f" {i}")
                begun = time.perf_counter()
                list(client.recall_memories("u", query))
                latencies.append(time.perf_counter() - begun)
            recall_cpu = (cpu_seconds(pid) - started) / RECALLS * 1000
            ordered = sorted(latencies)
            p50, p99 = ordered[len(ordered) // 2] * 1000, ordered[int(0.99 * len(ordered))] * 1000
            rss = rss_bytes(pid) / 2**20
    return (
        f"| {embedder} | {create_cpu:.2f} | {create_p50:.2f} | {recall_cpu:.2f} | {p50:.2f} "
        f"| {p99:.2f} | {rss:.0f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(
        "| embedder | CreateMemory CPU ms/call | p50 ms | RecallMemories CPU ms/call | p50 ms "
        "| p99 ms | RSS MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for _ in range(args.rounds):
            for embedder in ("none", "local"):
                print(_measure(embedder, databases), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
