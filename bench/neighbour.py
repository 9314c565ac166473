"""``make bench-neighbour``: does a noisy neighbour raise a quiet user's latency?

For each store, one ``mnemo serve`` process (``--auth jwt``, a per-user rate
limit of ``--rate`` calls/s, bursts of the same) on a fresh migrated
database. A quiet user Q, in this process, makes ``--calls`` calls paced at
half its limit, cycling ``CreateMemory``, ``RecallMemories`` (lexical) and
``GetMemoryState``; first alone (quiet), then (noisy) while, each in a process
of its own:

- user A floods at ``--flood-factor`` (10) times its limit with
  ``CreateMemory`` (so most of its calls get ``RESOURCE_EXHAUSTED``);
- user B holds the most change watches one user may hold
  (``--watch-max-watchers-per-user``, default 100), checks that one more is
  refused, and appends one message a second to its own conversation, so
  each append wakes all its watches.

Reported per store: Q's p50 / p99 in each phase and the ratios noisy /
quiet, the server CPU per request (user + system time of the server from
``/proc/PID/stat`` over the phase ÷ every request the server received in it,
A's refusals included), and what A and B did. Target: p99 ratio <= 2.

    python bench/neighbour.py [--stores sqlite,postgres] [--calls 400] [--rate 20]
                              [--json FILE] [--record]

``--record`` puts the figures into ``docs/benchmarks.json`` (key
``neighbour``, with this command) and re-renders ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: python bench/neighbour.py
    sys.path.insert(0, str(ROOT))

from bench import machine, report  # noqa: E402
from bench.servers import Databases, Server, cpu_seconds, serve  # noqa: E402
from mnemo.client import AsyncMnemoClient  # noqa: E402
from mnemo.client.errors import MnemoError  # noqa: E402
from tests.support.tokens import AUDIENCE, SigningKeys  # noqa: E402

Sample = tuple[str, float]  # an RPC and its latency in ms
QUIET_RPCS = ("CreateMemory", "RecallMemories", "GetMemoryState")  # Q's calls, in turn
WATCHES_PER_USER = 100  # the server's default --watch-max-watchers-per-user
WARMUP_CALLS = 30
TOKEN_SECONDS = 3600


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _client(target: str, token: str) -> AsyncMnemoClient:
    return AsyncMnemoClient(target, timeout=30, metadata={"authorization": f"Bearer {token}"})


def _code(error: MnemoError) -> str:
    return error.code.name if error.code is not None else "UNKNOWN"


# ------------------------------------------------------------ the neighbours


async def _paced(rate: float, tasks: int, step: Callable[[int], Awaitable[None]]) -> None:
    """``tasks`` workers that together start about ``rate`` steps per second."""

    async def worker(k: int) -> None:
        interval = tasks / rate
        due = time.monotonic() + k * interval / tasks
        i = k
        while True:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            await step(i)
            i += tasks
            due = max(due + interval, time.monotonic() - 1.0)

    await asyncio.gather(*(worker(k) for k in range(tasks)))


async def _serve_marks(counts: Counter[str]) -> None:
    """Answer each line on stdin with the counts so far (a JSON line)."""
    print(json.dumps({"ready": True}), flush=True)
    while await asyncio.to_thread(sys.stdin.readline):
        print(json.dumps(dict(counts)), flush=True)


async def flood(target: str, token: str, rate: float) -> None:
    """User A: ``CreateMemory`` at ``rate`` calls/s, whatever the answers."""
    counts: Counter[str] = Counter()
    async with _client(target, token) as client:

        async def step(i: int) -> None:
            try:
                await client.create_memory("noisy-a", f"flood {i}", request_id=f"a-{i}")
                counts["OK"] += 1
            except MnemoError as error:
                counts[_code(error)] += 1

        load = asyncio.create_task(_paced(rate, 8, step))
        while not counts:  # the flood reaches the server before the mark says ready
            await asyncio.sleep(0.05)
        try:
            await _serve_marks(counts)
        finally:
            load.cancel()


async def hold_watches(
    target: str, token: str, watches: int, write_rate: float, limit: float
) -> None:
    """User B: ``watches`` live watches (opened at 0.8 x its rate ``limit``),
    one more refused, then ``write_rate`` appends/s."""
    counts: Counter[str] = Counter()
    async with _client(target, token) as client:
        live = asyncio.Semaphore(0)

        async def watch() -> None:
            first = True
            try:
                async for event in client.watch_changes("noisy-b", timeout=3600):
                    if not event.HasField("heartbeat"):
                        counts["changes_received"] += 1
                    elif first:
                        first = False
                        counts["live"] += 1
                        live.release()
            except MnemoError as error:
                capped = "change watches" in error.message  # not the rate limit's refusal
                counts[f"watch {'capped' if capped else _code(error)}"] += 1
                live.release()

        held = []
        for _ in range(watches):
            held.append(asyncio.create_task(watch()))
            await asyncio.sleep(1 / (0.8 * limit))
        for _ in range(watches):
            await live.acquire()
        extra = asyncio.create_task(watch())
        await live.acquire()  # the one more: refused (counted) or, if not, live

        async def step(i: int) -> None:
            try:
                await client.append_messages(
                    "noisy-b", "chat", [{"role": "user", "content": f"b {i}"}]
                )
                counts["append OK"] += 1
            except MnemoError as error:
                counts[f"append {_code(error)}"] += 1

        load = asyncio.create_task(_paced(write_rate, 1, step))
        try:
            await _serve_marks(counts)
        finally:
            load.cancel()
            for task in [*held, extra]:
                task.cancel()


# ---------------------------------------------------------------- the quiet user


async def quiet_calls(
    client: AsyncMnemoClient, calls: int, rate: float, offset: int
) -> list[Sample]:
    """Q's ``calls`` calls paced at ``rate``: each one's RPC and latency in ms
    (a failure raises)."""
    latencies: list[Sample] = []

    async def recall() -> None:
        async for _ in client.recall_memories("quiet-q", "quiet note about trains", max_results=10):
            pass

    async def step(i: int) -> None:
        kind = i % 3
        start = time.perf_counter()
        if kind == 0:
            await client.create_memory("quiet-q", f"quiet note {offset + i} about trains")
        elif kind == 1:
            await recall()
        else:
            await client.get_memory_state("quiet-q", "chat")
        latencies.append((QUIET_RPCS[kind], (time.perf_counter() - start) * 1000))
        if len(latencies) >= calls:
            raise _Done

    with contextlib.suppress(_Done):
        await _paced(rate, 1, step)
    return latencies


class _Done(Exception):
    pass


class Neighbour:
    """A neighbour process (``--role``); ``mark()`` returns its counts so far."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.neighbour", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._read()  # {"ready": true}

    def _read(self) -> dict[str, int]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"neighbour {self.process.args!r} ended ({self.process.wait()})")
        result: dict[str, int] = json.loads(line)
        return result

    def mark(self) -> dict[str, int]:
        assert self.process.stdin is not None
        self.process.stdin.write("mark\n")
        self.process.stdin.flush()
        return self._read()

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _requests(before: dict[str, int], after: dict[str, int], prefix: str) -> int:
    """The calls counted under keys ``"<prefix> <code>"`` between two marks."""
    return sum(after[k] - before.get(k, 0) for k in after if k.startswith(prefix + " "))


def _profile(
    server: Server, args: argparse.Namespace, seconds: float
) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the server over the noisy phase, with ``--profile``."""
    if not args.profile:
        return None
    output = Path(args.profile).with_suffix(f".{server.pid}.txt")
    print(f"profiling the noisy phase into {output}", file=sys.stderr, flush=True)
    return subprocess.Popen(
        [args.py_spy, "record", "-p", str(server.pid), "-o", str(output), "-f", "raw",
         "-d", str(math.ceil(seconds)), "-r", "200"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def _phase(samples: list[Sample], cpu: float, requests: int, seconds: float) -> dict[str, Any]:
    latencies = [ms for _, ms in samples]
    by_rpc: dict[str, list[float]] = {}
    for rpc, ms in samples:
        by_rpc.setdefault(rpc, []).append(ms)
    return {
        "slowest_ms": [round(v, 1) for v in sorted(latencies)[-8:]],
        "by_rpc": {
            rpc: {"p50_ms": round(statistics.median(v), 2), "p99_ms": round(percentile(v, 0.99), 2)}
            for rpc, v in sorted(by_rpc.items())
        },
        "server_cpu_share": round(cpu / seconds, 3),
        "calls": len(latencies),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
        "server_requests": requests,
        "server_cpu_ms_per_request": round(cpu * 1000 / max(1, requests), 3),
    }


def _measure_quiet(
    server: Server, token: str, calls: int, rate: float, offset: int
) -> tuple[list[Sample], float, float]:
    """Q's warm-up calls, then its measured ones: their latencies, and the
    server's CPU seconds over both (the span the neighbours' counts cover), and
    that span's seconds."""

    async def run() -> list[Sample]:
        async with _client(server.target, token) as client:
            await quiet_calls(client, WARMUP_CALLS, rate, offset - WARMUP_CALLS)
            return await quiet_calls(client, calls, rate, offset)

    cpu, start = cpu_seconds(server.pid), time.monotonic()
    latencies = asyncio.run(run())
    return latencies, cpu_seconds(server.pid) - cpu, time.monotonic() - start


@dataclass
class Noisy:
    """Q's figures while the neighbours ran, and what they did meanwhile."""

    latencies: list[Sample]
    cpu: float
    seconds: float
    flood: Counter[str]
    watch: Counter[str]
    watch_counts: dict[str, int]


def _beside_neighbours(
    server: Server, neighbours_on: Server, token: Callable[[str], str], args: argparse.Namespace,
    offset: int, profile: bool, before: Noisy | None,
) -> Noisy:  # fmt: skip
    """Q's calls on ``server`` while A floods and B holds its watches on
    ``neighbours_on``; added to ``before`` (the earlier rounds) if given."""
    quiet_rate = args.rate / 2
    flooder = Neighbour(
        ["--role", "flood", "--target", neighbours_on.target, "--token", token("noisy-a"),
         "--rate", f"{args.rate * args.flood_factor:g}"]
    )  # fmt: skip
    try:
        holder = Neighbour(
            ["--role", "watch", "--target", neighbours_on.target, "--token", token("noisy-b"),
             "--watches", str(args.watches), "--rate", f"{args.rate:g}",
             "--b-write-rate", f"{args.b_write_rate:g}"]
        )  # fmt: skip
        try:
            a0, b0 = flooder.mark(), holder.mark()
            spy = _profile(server, args, 1.5 * args.calls / quiet_rate) if profile else None
            latencies, cpu, seconds = _measure_quiet(
                server, token("quiet-q"), args.calls, quiet_rate, offset
            )
            a1, b1 = flooder.mark(), holder.mark()
            if spy is not None:
                spy.wait()
        finally:
            holder.stop()
    finally:
        flooder.stop()
    now = Noisy(
        latencies,
        cpu,
        seconds,
        Counter({k: a1[k] - a0.get(k, 0) for k in a1}),
        Counter({k: b1[k] - b0.get(k, 0) for k in b1}),
        b1,
    )
    if before is None:
        return now
    return Noisy(
        before.latencies + now.latencies,
        before.cpu + now.cpu,
        before.seconds + now.seconds,
        before.flood + now.flood,
        before.watch + now.watch,
        now.watch_counts,
    )


def measure_store(databases: Databases, store: str, args: argparse.Namespace) -> dict[str, Any]:
    """Q alone (quiet); beside A and B on Q's server (noisy); beside A and B
    on another server process of the same store (control: the same load on
    the machine, nothing shared in the server)."""
    keys = SigningKeys.hs256()
    env = {
        "MNEMO_AUTH": "jwt",
        "MNEMO_JWT_HS256_SECRET_FILE": str(keys.write(databases.dir)),
        "MNEMO_JWT_AUDIENCE": AUDIENCE,
        "MNEMO_RATE_LIMIT_PER_SECOND": f"{args.rate:g}",
    }

    def token(user: str) -> str:
        return keys.token(user, expires_in=TOKEN_SECONDS)

    with (
        serve(databases.fresh(store), extra_env=env) as server,
        serve(databases.fresh(store), extra_env=env) as other,
    ):
        quiet: list[Sample] = []
        quiet_cpu = quiet_seconds = 0.0
        noisy = control = None
        for k in range(args.rounds):  # interleaved: a drift of the machine's load hits all three
            latencies, cpu, seconds = _measure_quiet(
                server, token("quiet-q"), args.calls, args.rate / 2, (30 * k + 1) * args.calls
            )
            quiet += latencies
            quiet_cpu += cpu
            quiet_seconds += seconds
            offset = (30 * k + 10) * args.calls
            noisy = _beside_neighbours(server, server, token, args, offset, k == 0, noisy)
            offset = (30 * k + 20) * args.calls
            control = _beside_neighbours(server, other, token, args, offset, False, control)
        server.check()
        other.check()
    assert noisy is not None and control is not None
    a_calls = sum(noisy.flood.values())
    b_calls = _requests({}, noisy.watch, "append")
    rounds = args.rounds
    q = _phase(quiet, quiet_cpu, len(quiet) + rounds * WARMUP_CALLS, quiet_seconds)
    n = _phase(
        noisy.latencies,
        noisy.cpu,
        len(noisy.latencies) + rounds * WARMUP_CALLS + a_calls + b_calls,
        noisy.seconds,
    )
    c = _phase(
        control.latencies,
        control.cpu,
        len(control.latencies) + rounds * WARMUP_CALLS,
        control.seconds,
    )
    return {
        "store": store,
        "rate_limit_per_second": args.rate,
        "quiet": q,
        "noisy": n,
        "control": c,
        "p50_ratio": round(n["p50_ms"] / q["p50_ms"], 2),
        "p99_ratio": round(n["p99_ms"] / q["p99_ms"], 2),
        "p99_ratio_to_control": round(n["p99_ms"] / c["p99_ms"], 2),
        "target_p99_ratio": 2.0,
        "flood": {
            "attempted_per_second": round(a_calls / noisy.seconds, 1),
            "refused_share": round(noisy.flood.get("RESOURCE_EXHAUSTED", 0) / max(1, a_calls), 3),
            "codes": dict(noisy.flood),
        },
        "watches": {
            "held": noisy.watch_counts.get("live", 0),
            "one_more_refused": noisy.watch_counts.get("watch capped", 0) == 1,
            "codes": noisy.watch_counts,
            "appends_per_second": round(b_calls / noisy.seconds, 2),
            "changes_received": noisy.watch.get("changes_received", 0),
        },
        "noisy_seconds": round(noisy.seconds, 1),
        "rounds": rounds,
    }


def rows(results: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in results:
        if "error" in r:
            out.append(f"| {r['store']} | failed: {r['error'][-200:]} |")
            continue
        q, n = r["quiet"], r["noisy"]
        verdict = "met" if r["p99_ratio"] <= r["target_p99_ratio"] else "**not met**"
        c = r["control"]
        out.append(
            f"| {r['store']} | {q['p50_ms']:.1f} / {q['p99_ms']:.1f} | {n['p50_ms']:.1f} / "
            f"{n['p99_ms']:.1f} | {c['p50_ms']:.1f} / {c['p99_ms']:.1f} "
            f"| {r['p50_ratio']:.2f} | {r['p99_ratio']:.2f} ({verdict}) "
            f"| {r['p99_ratio_to_control']:.2f} "
            f"| {q['server_cpu_ms_per_request']:.2f} / {n['server_cpu_ms_per_request']:.2f} "
            f"| {q['server_cpu_share']:.0%} / {n['server_cpu_share']:.0%} "
            f"| {r['flood']['attempted_per_second']:.0f}/s, {r['flood']['refused_share']:.0%} refused "
            f"| {r['watches']['held']} held, one more refused: "
            f"{'yes' if r['watches']['one_more_refused'] else 'no'}; "
            f"{r['watches']['appends_per_second']:.1f} appends/s |"
        )
    return out


HEADER = (
    "| store | Q quiet p50 / p99 ms | Q noisy p50 / p99 ms | Q control p50 / p99 ms "
    "| p50 noisy / quiet | p99 noisy / quiet (target <= 2) | p99 noisy / control "
    "| server CPU ms per request quiet / noisy | server CPU (of one core) quiet / noisy "
    "| A's flood | B's watches |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def _record(entry: dict[str, Any]) -> None:
    """Into docs/benchmarks.json (key ``neighbour``) and docs/benchmarks.md."""
    source = ROOT / "docs" / "benchmarks.json"
    results = json.loads(source.read_text())
    results["neighbour"] = entry
    source.write_text(json.dumps(results, indent=1) + "\n")
    page = ROOT / "docs" / "benchmarks.md"
    page.write_text(report.render(results, report.citus_run(page)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--calls", type=int, default=400, help="Q's measured calls per phase")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of quiet, noisy, control (pooled)"
    )
    parser.add_argument("--rate", type=float, default=20.0, help="the per-user limit, calls/s")
    parser.add_argument("--flood-factor", type=float, default=10.0)
    parser.add_argument("--watches", type=int, default=WATCHES_PER_USER)
    parser.add_argument("--b-write-rate", type=float, default=1.0)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--profile", help="py-spy the server over the noisy phase into FILE.PID.txt"
    )
    parser.add_argument("--py-spy", default=str(ROOT / ".venv-bench" / "bin" / "py-spy"))
    parser.add_argument("--record", action="store_true", help="into docs/benchmarks.json + .md")
    parser.add_argument("--command", default="", help="the command to show in the report")
    parser.add_argument("--role", choices=("flood", "watch"), help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "flood":
        asyncio.run(flood(args.target, args.token, args.rate))
        return
    if args.role == "watch":
        asyncio.run(
            hold_watches(args.target, args.token, args.watches, args.b_write_rate, args.rate)
        )
        return
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for store in args.stores.split(","):
            try:
                results.append(measure_store(databases, store, args))
            except Exception as error:  # recorded; the other store still runs
                results.append({"store": store, "error": f"{type(error).__name__}: {error}"})
            print("\n".join(rows(results[-1:])), flush=True)
    entry = {
        "command": args.command or "python bench/neighbour.py " + shlex.join(sys.argv[1:]),
        "started": started,
        "machine": machine.describe(),
        "load_average_after": machine.load_average(),
        "results": results,
    }
    print(f"\n{HEADER}\n" + "\n".join(rows(results)))
    if args.json:
        args.json.write_text(json.dumps(entry, indent=1) + "\n")
    if args.record:
        _record(entry)
    failed = any("error" in r or not math.isfinite(r["p99_ratio"]) for r in results)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
