"""``make soak``: a mixed load on one ``mnemo serve`` process for a long time,
sampled as it runs, failing if what the server holds trends upward.

One server (default options) on a fresh migrated database: a SQLite file, or
a database of a throwaway PostgreSQL cluster that is durable like production
(``bench.servers``). One client process (this one, asyncio, one channel)
paces a mixed load at about ``--rate`` calls/s over ``--users`` users:

- writers: ``CreateMemory``, ``AppendMessages``, ``SaveMemoryState``;
- readers: ``RecallMemories`` (lexical), ``GetMemoryState``, ``ListMemories``
  (first page);
- ``--watches`` watchers, each opening a ``WatchChanges`` of a random user,
  holding it 0.5-3 s (``WatchChanges`` latency = until the first heartbeat:
  the watch is live) and closing it (a cancel, as a client that goes away);
- an eraser: ``DeleteUserData`` of the next user in turn every
  ``--erase-seconds``, so every user's data is erased and written again all
  the time and the data set stays bounded (a steady state to trend over).

Every ``--sample-seconds`` it records the server's RSS (``/proc/PID/status``
``VmRSS``), open file descriptors (``/proc/PID/fd``), database connections
(PostgreSQL: ``pg_stat_activity`` rows of the database; SQLite: the server's
descriptors open on the database file, its ``-wal`` and ``-shm``, one set per
pooled connection), its CPU, and per RPC the calls completed in the window,
their p50 / p99 and the errors by status code.

Trend check, over the samples after the warm-up (``--warmup-seconds``): the
median of the last third against the median of the first third, each metric
with its own tolerance (``TOLERANCES``: why each is what it is), and the
Theil-Sen slope per hour for the record. The run fails (exit 1) if any metric
exceeds its tolerance, if any call fails (any status but the watches' own
cancellations), or if the server ends.

    python bench/soak.py [--minutes 20] [--store sqlite|postgresql] [--rate 60]
                         [--sample-seconds 10] [--json FILE] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: python bench/soak.py
    sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from bench.servers import Databases, Server, cpu_seconds, rss_bytes, serve  # noqa: E402
from mnemo.client import AsyncMnemoClient  # noqa: E402
from mnemo.client.errors import MnemoError  # noqa: E402
from tests.support.memory_corpus import Corpus  # noqa: E402
from tests.support.pgcluster import libpq_url  # noqa: E402

CONVERSATION = "soak"
WATCH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Tolerance:
    """How far the last third's median may exceed the first third's:
    ``first * ratio + slack``."""

    ratio: float
    slack: float
    why: str

    def limit(self, first: float) -> float:
        return first * self.ratio + self.slack


MIB = 1024 * 1024
TOLERANCES: dict[str, Tolerance] = {
    "rss_mib": Tolerance(
        1.10,
        8.0,
        "after the warm-up the caches (SQLite page cache per connection, the "
        "vector and statement caches, Python's allocator arenas) are full; 10% + "
        "8 MiB leaves room for arena fragmentation, a steady leak of a few "
        "hundred KiB per minute or more exceeds it within 20 minutes",
    ),
    "fds": Tolerance(
        1.0,
        3.0,
        "one client channel (one socket), the database files, the log: the "
        "count is flat; 3 allows for a pool connection (SQLite: its file, -wal "
        "and -shm) opened late under a burst",
    ),
    "db_connections": Tolerance(
        1.0,
        2.0,
        "the pool opens connections lazily up to its size; 2 allows for one "
        "or two opened late under a burst (a leak grows without bound)",
    ),
    "p50_ms": Tolerance(
        1.5,
        2.0,
        "the data set is bounded by the erasures, so a call's work is flat; "
        "x1.5 + 2 ms absorbs the shared 2-core machine's neighbours",
    ),
    "p99_ms": Tolerance(
        2.0,
        10.0,
        "the p99 of a window of about a hundred calls is its one or two "
        "slowest, the figure most exposed to other processes on the machine",
    ),
}
# WatchChanges ends with CANCELLED when this client closes it; nothing else may fail.
EXPECTED = {("WatchChanges", "CANCELLED")}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def theil_sen(xs: list[float], ys: list[float]) -> float:
    """The median of the pairwise slopes (robust to a few outlying samples)."""
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i])
        for i in range(len(xs))
        for j in range(i + 1, len(xs))
        if xs[j] != xs[i]
    ]
    return statistics.median(slopes) if slopes else 0.0


@dataclass
class Window:
    """What the load saw since the last sample."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)


@dataclass
class Load:
    target: str
    users: list[str]
    rate: float
    watches: int
    erase_seconds: float
    window: Window = field(default_factory=Window)
    open_watches: int = 0
    stopping: bool = False

    async def timed(self, rpc: str, call: Callable[[], Awaitable[object]]) -> None:
        start = time.perf_counter()
        try:
            await call()
        except MnemoError as error:
            code = error.code.name if error.code is not None else "UNKNOWN"
            self.window.errors[(rpc, code)] += 1
            return
        self.window.latencies[rpc].append((time.perf_counter() - start) * 1000)

    async def paced(self, share: float, step: Callable[[int], Awaitable[None]]) -> None:
        """Run ``step`` at ``share`` of the rate (one call at a time, as a client)."""
        interval = 1.0 / (self.rate * share)
        i = 0
        due = time.monotonic()
        while not self.stopping:
            await step(i)
            i += 1
            due += interval * random.uniform(0.5, 1.5)
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            due = max(due, time.monotonic() - 1.0)  # after a stall, do not burst

    async def writer(self, client: AsyncMnemoClient, seed: int) -> None:
        corpus = Corpus(seed)
        rng = random.Random(seed)

        async def step(i: int) -> None:
            user = rng.choice(self.users)
            kind = i % 3
            if kind == 0:
                text = corpus.sentence()
                await self.timed("CreateMemory", lambda: client.create_memory(user, text))
            elif kind == 1:
                message = {"role": "user", "content": f"message {i} from the soak"}
                await self.timed(
                    "AppendMessages",
                    lambda: client.append_messages(user, CONVERSATION, [message]),
                )
            else:
                await self.timed(
                    "SaveMemoryState",
                    lambda: client.save_memory_state(
                        user,
                        CONVERSATION,
                        summary=f"summary {i}",
                        recent=[{"ask": f"question {i}?", "answer": f"answer {i}."}],
                    ),
                )

        await self.paced(0.5, step)

    async def reader(self, client: AsyncMnemoClient, seed: int) -> None:
        corpus = Corpus(seed)
        rng = random.Random(seed)

        async def recall(user: str, query: str) -> None:
            async for _ in client.recall_memories(user, query, max_results=10):
                pass

        async def step(i: int) -> None:
            user = rng.choice(self.users)
            kind = i % 3
            if kind == 0:
                query = " ".join(corpus.sentence().split()[:3])
                await self.timed("RecallMemories", lambda: recall(user, query))
            elif kind == 1:
                await self.timed(
                    "GetMemoryState", lambda: client.get_memory_state(user, CONVERSATION)
                )
            else:
                await self.timed(
                    "ListMemories", lambda: client.list_memories_page(user, page_size=50)
                )

        await self.paced(0.45, step)

    async def watcher(self, client: AsyncMnemoClient, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stopping:
            user = rng.choice(self.users)
            hold = rng.uniform(0.5, 3.0)
            start = time.perf_counter()
            self.open_watches += 1
            try:
                async with asyncio.timeout(hold):
                    async for event in client.watch_changes(user, timeout=WATCH_TIMEOUT_S):
                        if event.HasField("heartbeat") and start:
                            self.window.latencies["WatchChanges"].append(
                                (time.perf_counter() - start) * 1000
                            )
                            start = 0.0
            except TimeoutError:
                pass  # closed by this client: the stream is cancelled
            except MnemoError as error:
                code = error.code.name if error.code is not None else "UNKNOWN"
                self.window.errors[("WatchChanges", code)] += 1
                await asyncio.sleep(1.0)
            finally:
                self.open_watches -= 1
            await asyncio.sleep(rng.uniform(0.0, 0.5))

    async def eraser(self, client: AsyncMnemoClient) -> None:
        k = 0
        while not self.stopping:
            await asyncio.sleep(self.erase_seconds)
            user = self.users[k % len(self.users)]
            k += 1
            await self.timed("DeleteUserData", functools.partial(client.delete_user_data, user))

    def take_window(self) -> Window:
        window, self.window = self.window, Window()
        return window


class Probe:
    """The server's resources: RSS, descriptors, database connections, CPU."""

    def __init__(self, server: Server, store: str, url: str) -> None:
        self.server = server
        self.store = store
        self.url = url
        self._db_path = url.split(":///", 1)[1] if store == "sqlite" else ""

    def fds(self) -> list[str]:
        out = []
        for entry in os.scandir(f"/proc/{self.server.pid}/fd"):
            with contextlib.suppress(OSError):
                out.append(os.readlink(entry.path))
        return out

    def db_connections(self, fds: list[str]) -> int:
        if self.store == "sqlite":
            return sum(1 for target in fds if target.startswith(self._db_path))
        import psycopg

        name = self.url.rsplit("/", 1)[1].split("?", 1)[0]
        with psycopg.connect(libpq_url(self.url), connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchone()
        return int(row[0]) if row else 0

    def sample(self) -> dict[str, Any]:
        fds = self.fds()
        return {
            "rss_mib": rss_bytes(self.server.pid) / MIB,
            "fds": len(fds),
            "db_connections": self.db_connections(fds),
            "cpu_seconds": cpu_seconds(self.server.pid),
        }


async def run_load(
    server: Server, probe: Probe, args: argparse.Namespace, run: str
) -> list[dict[str, Any]]:
    users = [f"soak-{run}-{k}" for k in range(args.users)]
    load = Load(server.target, users, args.rate, args.watches, args.erase_seconds)
    samples: list[dict[str, Any]] = []
    async with AsyncMnemoClient(server.target, timeout=30) as client:
        tasks = [
            asyncio.create_task(load.writer(client, 1)),
            asyncio.create_task(load.reader(client, 2)),
            asyncio.create_task(load.eraser(client)),
            *(asyncio.create_task(load.watcher(client, 10 + k)) for k in range(args.watches)),
        ]
        started = time.monotonic()
        end = started + args.minutes * 60
        before = await asyncio.to_thread(probe.sample)
        try:
            while time.monotonic() < end:
                await asyncio.sleep(min(args.sample_seconds, max(0.0, end - time.monotonic())))
                server.check()
                for task in tasks:
                    if task.done():
                        task.result()  # a load task that crashed ends the run
                window = load.take_window()
                now = await asyncio.to_thread(probe.sample)
                elapsed = time.monotonic() - started
                seconds = args.sample_seconds
                sample: dict[str, Any] = {
                    "t_seconds": round(elapsed, 1),
                    "rss_mib": round(now["rss_mib"], 1),
                    "fds": now["fds"],
                    "db_connections": now["db_connections"],
                    "server_cpu": round((now["cpu_seconds"] - before["cpu_seconds"]) / seconds, 3),
                    "open_watches": load.open_watches,
                    "rpcs": {
                        rpc: {
                            "calls": len(values),
                            "p50_ms": round(statistics.median(values), 2),
                            "p99_ms": round(percentile(values, 0.99), 2),
                        }
                        for rpc, values in sorted(window.latencies.items())
                    },
                    "errors": {f"{rpc} {code}": n for (rpc, code), n in window.errors.items()},
                }
                before = now
                samples.append(sample)
                print(_line(sample), flush=True)
        finally:
            load.stopping = True
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
    return samples


def _line(sample: dict[str, Any]) -> str:
    rpcs = sample["rpcs"]
    calls = sum(r["calls"] for r in rpcs.values())
    worst = max((r["p99_ms"] for r in rpcs.values()), default=0.0)
    errors = f" errors {sample['errors']}" if sample["errors"] else ""
    return (
        f"t={sample['t_seconds']:7.1f}s rss={sample['rss_mib']:6.1f} MiB fds={sample['fds']:3d} "
        f"db={sample['db_connections']:2d} cpu={sample['server_cpu']:.2f} calls={calls:5d} "
        f"watches={sample['open_watches']} worst p99={worst:.1f} ms{errors}"
    )


def _series(samples: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Every trended metric as (t, value) points."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in samples:
        t = float(s["t_seconds"])
        for key in ("rss_mib", "fds", "db_connections"):
            out[key].append((t, float(s[key])))
        for rpc, figures in s["rpcs"].items():
            for key in ("p50_ms", "p99_ms"):
                out[f"{rpc} {key}"].append((t, float(figures[key])))
    return out


def trends(samples: list[dict[str, Any]], warmup_seconds: float) -> list[dict[str, Any]]:
    """Per metric: first- and last-third medians after the warm-up, the
    limit, the Theil-Sen slope per hour, and whether it held."""
    kept = [s for s in samples if s["t_seconds"] > warmup_seconds]
    rows: list[dict[str, Any]] = []
    for metric, points in _series(kept).items():
        if len(points) < 3:
            continue
        third = len(points) // 3
        first = statistics.median(v for _, v in points[:third])
        last = statistics.median(v for _, v in points[-third:])
        tolerance = TOLERANCES[metric.rsplit(" ", 1)[-1]]
        limit = tolerance.limit(first)
        slope = theil_sen([t for t, _ in points], [v for _, v in points]) * 3600
        rows.append(
            {
                "metric": metric,
                "first_third": round(first, 2),
                "last_third": round(last, 2),
                "limit": round(limit, 2),
                "slope_per_hour": round(slope, 2),
                "ok": last <= limit,
            }
        )
    return rows


def unexpected_errors(samples: list[dict[str, Any]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for s in samples:
        for key, n in s["errors"].items():
            rpc, code = key.rsplit(" ", 1)
            if (rpc, code) not in EXPECTED:
                total[key] += n
    return dict(total)


def report(results: dict[str, Any]) -> str:
    """The run as markdown: context, the trend table, the samples over time."""
    samples: list[dict[str, Any]] = results["samples"]
    lines = [
        f"Command: `{results['command']}`",
        "",
        f"{results['started']}, {results['context']}; {len(samples)} samples every "
        f"{results['sample_seconds']:g} s, warm-up {results['warmup_seconds']:g} s excluded "
        f"from the trends. **{'passed' if results['passed'] else 'FAILED'}**"
        + (
            f": unexpected errors {results['unexpected_errors']}"
            if results["unexpected_errors"]
            else ""
        ),
        "",
        "| metric | first third (median) | last third (median) | limit | Theil-Sen slope / h | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["trends"]:
        lines.append(
            f"| {row['metric']} | {row['first_third']:g} | {row['last_third']:g} "
            f"| {row['limit']:g} | {row['slope_per_hour']:+g} | {'ok' if row['ok'] else '**up**'} |"
        )
    rpcs = sorted({rpc for s in samples for rpc in s["rpcs"]})
    lines += [
        "",
        "Over time (about 12 samples spread over the run; p50 / p99 ms of the calls completed in each sample's window):",
        "",
        "| t s | RSS MiB | fds | DB conns | server CPU | calls | " + " | ".join(rpcs) + " |",
        "|---" * (6 + len(rpcs)) + "|",
    ]
    step = max(1, len(samples) // 12)
    for s in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else []):
        calls = sum(r["calls"] for r in s["rpcs"].values())
        cells = [
            f"{s['rpcs'][r]['p50_ms']:.1f} / {s['rpcs'][r]['p99_ms']:.1f}"
            if r in s["rpcs"]
            else "-"
            for r in rpcs
        ]
        lines.append(
            f"| {s['t_seconds']:.0f} | {s['rss_mib']:.1f} | {s['fds']} | {s['db_connections']} "
            f"| {s['server_cpu']:.2f} | {calls} | " + " | ".join(cells) + " |"
        )
    errors: Counter[str] = Counter()
    for s in samples:
        errors.update(s["errors"])
    lines += ["", f"Errors by RPC and code over the run: {dict(errors) or 'none'}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--store", default="sqlite", choices=("sqlite", "postgresql", "postgres"))
    parser.add_argument("--rate", type=float, default=60.0, help="calls/s of the writers + readers")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--watches", type=int, default=4, help="watchers opening and closing")
    parser.add_argument("--erase-seconds", type=float, default=2.0)
    parser.add_argument("--sample-seconds", type=float, default=10.0)
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=-1.0,
        help="samples excluded from the trends (default: the first 10%%, at least 30 s)",
    )
    parser.add_argument("--json", type=Path, help="samples and verdicts (default bench/results/)")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--command", default="", help="the command to show in the report")
    args = parser.parse_args()
    store = "postgres" if args.store.startswith("postgres") else "sqlite"
    warmup = args.warmup_seconds if args.warmup_seconds >= 0 else max(30.0, args.minutes * 6)
    run = f"{os.getpid():x}"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        url = databases.fresh(store)
        with serve(url) as server:
            samples = asyncio.run(run_load(server, Probe(server, store, url), args, run))
    rows = trends(samples, warmup)
    errors = unexpected_errors(samples)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    results: dict[str, Any] = {
        "command": args.command or "python bench/soak.py " + " ".join(sys.argv[1:]),
        "started": started,
        "context": (
            f"{store}, {args.minutes:g} min, about {args.rate:g} calls/s over {args.users} users, "
            f"{args.watches} watchers, an erasure every {args.erase_seconds:g} s; "
            f"{os.cpu_count()} cores shared with other work (load average at the end {load}), "
            f"Python {platform.python_version()}, grpcio {grpc.__version__}"
        ),
        "sample_seconds": args.sample_seconds,
        "warmup_seconds": warmup,
        "tolerances": {k: t.__dict__ for k, t in TOLERANCES.items()},
        "trends": rows,
        "unexpected_errors": errors,
        "passed": all(r["ok"] for r in rows) and not errors and bool(samples),
        "samples": samples,
    }
    out = (
        args.json
        or ROOT / "bench" / "results" / f"soak-{store}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    text = report(results)
    if args.markdown:
        args.markdown.write_text(text)
    print(f"\n{text}\nwrote {out}", flush=True)
    return 0 if results["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
