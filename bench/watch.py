"""``make bench-watch``: how long a change takes to reach a watcher, on the
same server process and on another one, on SQLite and PostgreSQL.

For each backend a fresh migrated database gets two ``mnemo serve`` processes
(A and B, as ``bench/run.py`` starts them, default options). This process
watches one user's feed on A and on B (``WatchChanges``), then ``--samples``
times appends one message through A and notes when the append's
acknowledgement arrived and when each watcher received the change carrying
the cursor the acknowledgement reported. The latency is receive time minus
acknowledgement time (it can be slightly negative: the notice leaves at
commit, before the response does). After both watchers received a write,
the next one waits ``--gap`` seconds plus a random 0 to 0.2 s, so each write
finds the watchers idle and lands at a random phase of B's SQLite poll (a
fixed wait would lock every sample to one phase of it). The baseline, measured on A in the same
run, is the health ``Check`` round trip; ``write`` is the append's own round
trip.

PostgreSQL wakes watchers by LISTEN/NOTIFY, on A and B alike. SQLite wakes
A's watchers in process at commit, and B's by B's poll of the file every
``--watch-poll-seconds`` (0.15 s by default): expect B's figures to spread
over that interval.

    python bench/watch.py [--samples 200] [--gap 0.05] [--backends sqlite,postgres]
                          [--markdown FILE]
    python -m bench.watch --database-url URL --backend NAME --json [--samples N]

The second form (what ``make bench`` runs, in a process of its own) measures
one migrated database and prints the figures as one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from bench.servers import Databases, serve  # noqa: E402
from mnemo.client import AsyncMnemoClient, MnemoClient  # noqa: E402

USER = "bench-watch"
CONVERSATION = "chat"
WATCH_TIMEOUT_S = 3600.0
RECEIVE_TIMEOUT_S = 30.0
# Longer than --watch-poll-seconds (0.15), so writes fall at every phase of the poll.
PHASE_SPREAD_S = 0.2


@dataclass
class Receiver:
    """One watcher: when each cursor arrived (``time.perf_counter``)."""

    arrived: dict[int, float] = field(default_factory=dict)
    live: asyncio.Event = field(default_factory=asyncio.Event)
    moved: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, client: AsyncMnemoClient) -> None:
        async for event in client.watch_changes(USER, timeout=WATCH_TIMEOUT_S):
            if event.HasField("change"):
                self.arrived[event.change.cursor] = time.perf_counter()
                self.moved.set()
            else:
                self.live.set()

    async def wait_for(self, cursor: int) -> float:
        while cursor not in self.arrived:
            self.moved.clear()
            await asyncio.wait_for(self.moved.wait(), RECEIVE_TIMEOUT_S)
        return self.arrived[cursor]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Figures:
    backend: str
    same_ms: list[float]
    other_ms: list[float]
    write_ms: list[float]
    baseline_ms: list[float]

    def as_json(self) -> dict[str, object]:
        """Medians and tails in milliseconds, and every sample."""
        out: dict[str, object] = {"store": self.backend, "samples": len(self.same_ms)}
        for key, values in (
            ("same_process", self.same_ms),
            ("other_process", self.other_ms),
            ("write", self.write_ms),
            ("baseline", self.baseline_ms),
        ):
            out[key] = {
                "p50_ms": statistics.median(values),
                "p99_ms": percentile(values, 0.99),
                "max_ms": max(values),
                "values_ms": values,
            }
        return out

    def rows(self) -> list[str]:
        base = statistics.median(self.baseline_ms)
        write = statistics.median(self.write_ms)
        out = []
        for where, values in (
            ("same process (A)", self.same_ms),
            ("other process (B)", self.other_ms),
        ):
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            out.append(
                f"| {self.backend} | {where} | {len(values)} | {p50:.1f} | {p99:.1f} "
                f"| {max(values):.1f} | {write:.1f} | {base:.2f} "
                f"| {p50 / base:.1f} / {p99 / base:.1f} |"
            )
        return out


async def measure(backend: str, a: str, b: str, samples: int, gap: float) -> Figures:
    with MnemoClient(a) as setup:
        setup.create_conversation(USER, CONVERSATION)
    async with (
        AsyncMnemoClient(a, timeout=30) as on_a,
        AsyncMnemoClient(b, timeout=30) as on_b,
        grpc.aio.insecure_channel(a) as plain,
    ):
        same, other = Receiver(), Receiver()
        tasks = [asyncio.create_task(same.run(on_a)), asyncio.create_task(other.run(on_b))]
        try:
            await asyncio.wait_for(same.live.wait(), RECEIVE_TIMEOUT_S)
            await asyncio.wait_for(other.live.wait(), RECEIVE_TIMEOUT_S)
            health = health_pb2_grpc.HealthStub(plain)
            baseline: list[float] = []
            for _ in range(samples):
                start = time.perf_counter()
                await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
                baseline.append((time.perf_counter() - start) * 1000)
            same_ms: list[float] = []
            other_ms: list[float] = []
            write_ms: list[float] = []
            for i in range(samples):
                await asyncio.sleep(gap + random.uniform(0.0, PHASE_SPREAD_S))
                start = time.perf_counter()
                response = await on_a.append_messages(
                    USER, CONVERSATION, [{"role": "user", "content": f"sample {i}"}]
                )
                acknowledged = time.perf_counter()
                write_ms.append((acknowledged - start) * 1000)
                cursor = response.change_cursor
                same_ms.append((await same.wait_for(cursor) - acknowledged) * 1000)
                other_ms.append((await other.wait_for(cursor) - acknowledged) * 1000)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
    return Figures(backend, same_ms, other_ms, write_ms, baseline)


HEADER = (
    "| store | watcher | samples | p50 ms | p99 ms | max ms | write p50 ms "
    "| baseline (health Check) p50 ms | p50 / p99 ÷ baseline |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def probe(backend: str, url: str, samples: int, gap: float) -> Figures:
    """Two server processes on ``url``; the figures of ``samples`` writes."""
    with serve(url) as a, serve(url) as b:
        return asyncio.run(measure(backend, a.target, b.target, samples, gap))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=200, help="writes per backend")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between writes")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--database-url", help="measure this migrated database only")
    parser.add_argument("--backend", default="sqlite", help="its name (with --database-url)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.database_url:
        figures = probe(args.backend, args.database_url, args.samples, args.gap)
        print(json.dumps(figures.as_json()) if args.json else "\n".join(figures.rows()))
        return
    rows: list[str] = []
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for backend in args.backends.split(","):
            figures = probe(backend, databases.fresh(backend), args.samples, args.gap)
            rows += figures.rows()
            print("\n".join(rows[-2:]), flush=True)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    context = (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores "
        f"(load average {load}), Python {platform.python_version()}, {args.samples} writes "
        f"{args.gap:g} s + random 0-{PHASE_SPREAD_S:g} s apart per store, two server processes per store"
    )
    table = "\n".join([HEADER, *rows])
    print(f"\n{context}\n\n{table}")
    if args.markdown:
        args.markdown.write_text(f"{context}\n\n{table}\n")


if __name__ == "__main__":
    main()
