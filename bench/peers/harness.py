"""Timed windows for the in-process peers (runs in the peers' environment,
``.venv-bench``; standard library only, plus ``bench.shapes``).

A peer driver defines, per operation, a factory ``make(worker) -> call``
(``call(i)``: the worker's i-th call) and hands it to ``measure_async``
(asyncio tasks, for async APIs) or ``measure_threads`` (OS threads, for
blocking APIs). Each window runs ``warmup`` seconds unmeasured, then counts
the calls that complete within the next ``seconds``, and notes the process's
CPU time over the measured part; windows are repeated ``repeat`` times. A
driver prints one JSON object (``Report.dump``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

AsyncCall = Callable[[int], Awaitable[object]]
SyncCall = Callable[[int], object]


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


@dataclass(frozen=True)
class Window:
    calls: int
    seconds: float
    cpu_s: float
    p50_ms: float
    errors: int
    first_error: str | None

    @property
    def throughput(self) -> float:
        return self.calls / self.seconds

    def as_json(self) -> dict[str, Any]:
        return self.__dict__ | {"throughput": self.throughput}


def _window(latencies: list[float], seconds: float, cpu_s: float, errors: list[str]) -> Window:
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000 if latencies else 0.0
    return Window(len(latencies), seconds, cpu_s, p50, len(errors), errors[0] if errors else None)


async def _async_window(
    make: Callable[[int], AsyncCall], concurrency: int, seconds: float, warmup: float
) -> Window:
    start = time.monotonic() + warmup
    end = start + seconds
    latencies: list[float] = []
    errors: list[str] = []
    cpu: dict[str, float] = {}
    counters = dict.fromkeys(range(concurrency), 0)

    async def sample() -> None:
        await asyncio.sleep(max(0.0, start - time.monotonic()))
        cpu["start"] = _cpu()
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        cpu["end"] = _cpu()

    async def worker(w: int, call: AsyncCall) -> None:
        while (began := time.monotonic()) < end:
            counters[w] += 1
            try:
                await call(counters[w])
            except Exception as exc:  # a peer's error is reported, not fatal
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            done = time.monotonic()
            if start <= done <= end:
                latencies.append(done - began)

    calls = [make(w) for w in range(concurrency)]
    await asyncio.gather(sample(), *(worker(w, c) for w, c in enumerate(calls)))
    return _window(latencies, seconds, cpu["end"] - cpu["start"], errors)


def measure_async(
    make: Callable[[int], AsyncCall], concurrency: int, seconds: float, warmup: float, repeat: int
) -> list[Window]:
    """``repeat`` windows of ``concurrency`` asyncio tasks (one event loop per window)."""
    return [asyncio.run(_async_window(make, concurrency, seconds, warmup)) for _ in range(repeat)]


async def measure_async_in_loop(
    make: Callable[[int], AsyncCall], concurrency: int, seconds: float, warmup: float, repeat: int
) -> list[Window]:
    """As ``measure_async``, on the running event loop (for clients bound to it)."""
    return [await _async_window(make, concurrency, seconds, warmup) for _ in range(repeat)]


def _thread_window(
    make: Callable[[int], SyncCall], concurrency: int, seconds: float, warmup: float
) -> Window:
    calls = [make(w) for w in range(concurrency)]
    start = time.monotonic() + warmup
    end = start + seconds
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def worker(call: SyncCall) -> None:
        i = 0
        mine: list[float] = []
        while (began := time.monotonic()) < end:
            i += 1
            try:
                call(i)
            except Exception as exc:  # a peer's error is reported, not fatal
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            done = time.monotonic()
            if start <= done <= end:
                mine.append(done - began)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in calls]
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, start - time.monotonic()))
    cpu_start = _cpu()
    time.sleep(max(0.0, end - time.monotonic()))
    cpu_end = _cpu()
    for thread in threads:
        thread.join()
    return _window(latencies, seconds, cpu_end - cpu_start, errors)


def measure_threads(
    make: Callable[[int], SyncCall], concurrency: int, seconds: float, warmup: float, repeat: int
) -> list[Window]:
    """``repeat`` windows of ``concurrency`` threads."""
    return [_thread_window(make, concurrency, seconds, warmup) for _ in range(repeat)]


@dataclass
class Report:
    """What a driver prints: one peer (library, class, store) and its cells."""

    peer: str
    store: str
    version: str
    concurrency_model: str
    durability: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, op: str, mnemo_op: str, concurrency: int, windows: list[Window]) -> None:
        throughputs = [w.throughput for w in windows]
        cpu = [1000 * w.cpu_s / w.calls for w in windows if w.calls]
        self.cells.append(
            {
                "op": op,
                "mnemo_op": mnemo_op,
                "concurrency": concurrency,
                "throughput": statistics.median(throughputs),
                "throughput_spread": [min(throughputs), max(throughputs)],
                "cpu_ms_per_call": statistics.median(cpu) if cpu else None,
                "p50_ms": statistics.median(w.p50_ms for w in windows),
                "errors": sum(w.errors for w in windows),
                "first_error": next((w.first_error for w in windows if w.first_error), None),
                "windows": [w.as_json() for w in windows],
            }
        )
        print(
            f"  {self.peer} [{self.store}] {op} c{concurrency}: "
            f"{statistics.median(throughputs):.0f}/s",
            file=sys.stderr,
            flush=True,
        )

    def dump(self) -> None:
        print(json.dumps(self.__dict__), flush=True)


def arguments(description: str) -> argparse.Namespace:
    """The options every driver takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dir", required=True, help="directory for SQLite files")
    parser.add_argument("--postgres", default="", help="libpq URL of a PostgreSQL server")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument(
        "--all-stores",
        action="store_true",
        help="also the optional pairs (SQLAlchemySession on SQLite, ADK on PostgreSQL)",
    )
    return parser.parse_args()


def levels(args: argparse.Namespace) -> list[int]:
    return [int(c) for c in str(args.concurrency).split(",")]


def sqlite_pragmas(execute: Callable[[str], Any]) -> str:
    """``journal_mode`` and ``synchronous`` as a connection reports them."""
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    journal = execute("PRAGMA journal_mode")
    synchronous = execute("PRAGMA synchronous")
    return f"SQLite journal_mode={str(journal).upper()}, synchronous={names.get(int(synchronous), synchronous)}"
