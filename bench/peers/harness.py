"""Timed windows for the in-process peers (runs in the peers' environment,
``.venv-bench``; standard library only, plus ``bench.shapes``).

A peer driver defines, per operation, a factory ``make(worker) -> call``
(``call(i)``: the worker's i-th call) and hands it to ``measure_async``
(asyncio tasks, for async APIs) or ``measure_threads`` (OS threads, for
blocking APIs). Windows work as the Mnemo cells' (``bench.loadgen``): a
warm-up of at least ``warmup`` seconds, until every worker has completed a
call; then at least ``seconds`` measured, until every worker has completed a
call within it; throughput by Little's law; the process's CPU time over the
measured part. Windows are repeated ``repeat`` times. A
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


# Bounds each phase of a window (warm-up, measuring). A library that starves
# some of its callers (a lock that is not fair) may never let every worker
# complete a call; the window then ends here and counts completions instead.
MAX_PHASE_S = 2.0


@dataclass(frozen=True)
class Window:
    """One measured window. ``throughput`` is by Little's law (workers ÷ mean
    latency), as for the Mnemo cells: exact for closed-loop workers, also when
    a call takes longer than the window."""

    workers: int
    calls: int
    seconds: float
    cpu_s: float
    mean_ms: float
    p50_ms: float
    p99_ms: float
    errors: int
    first_error: str | None
    every_worker: bool

    @property
    def throughput(self) -> float:
        """Little's law when every worker completed a call in the window;
        otherwise (some were starved until the window's bound) the count."""
        if not self.every_worker:
            return self.calls / self.seconds if self.seconds else 0.0
        return self.workers / (self.mean_ms / 1000) if self.mean_ms else 0.0

    @property
    def cpu_ms_per_call(self) -> float | None:
        if not self.throughput or not self.seconds:
            return None
        return 1000 * self.cpu_s / self.seconds / self.throughput

    def as_json(self) -> dict[str, Any]:
        return self.__dict__ | {
            "throughput": self.throughput,
            "counted_throughput": self.calls / self.seconds if self.seconds else 0.0,
            "cpu_ms_per_call": self.cpu_ms_per_call,
        }


class _Clock:
    """The phases of one window, shared by its workers: ``start`` and ``end``
    of the measured part, and each worker's completed calls."""

    def __init__(self, workers: int) -> None:
        self.start = float("inf")
        self.end = float("inf")
        self.completed = [0] * workers
        self.in_window = [0] * workers
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def record(self, w: int, began: float, done: float) -> None:
        with self.lock:
            self.completed[w] += 1
            if self.start <= done <= self.end:
                self.in_window[w] += 1
                self.latencies.append(done - began)

    def error(self, exc: Exception) -> None:
        with self.lock:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])

    def window(self, workers: int, cpu_s: float) -> Window:
        ordered = sorted(self.latencies)
        mean = statistics.fmean(ordered) * 1000 if ordered else 0.0
        p50 = ordered[len(ordered) // 2] * 1000 if ordered else 0.0
        p99 = ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)] * 1000 if ordered else 0.0
        errors = self.errors
        return Window(
            workers,
            len(ordered),
            self.end - self.start,
            cpu_s,
            mean,
            p50,
            p99,
            len(errors),
            errors[0] if errors else None,
            _ready(self.in_window),
        )


def _ready(counts: list[int]) -> bool:
    return all(counts)


async def _async_window(
    make: Callable[[int], AsyncCall], concurrency: int, seconds: float, warmup: float
) -> Window:
    clock = _Clock(concurrency)
    stop = False

    async def worker(w: int, call: AsyncCall) -> None:
        i = 0
        while not stop:
            i += 1
            began = time.monotonic()
            try:
                await call(i)
            except Exception as exc:  # a peer's error is reported, not fatal
                clock.error(exc)
                await asyncio.sleep(0.01)
                continue
            clock.record(w, began, time.monotonic())

    async def until(counts: list[int], at_least: float) -> None:
        deadline = time.monotonic() + MAX_PHASE_S
        await asyncio.sleep(at_least)
        while not _ready(counts) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    calls = [make(w) for w in range(concurrency)]
    tasks = [asyncio.create_task(worker(w, c)) for w, c in enumerate(calls)]
    await until(clock.completed, warmup)
    clock.start, cpu_start = time.monotonic(), _cpu()
    await until(clock.in_window, seconds)
    clock.end, cpu_end = time.monotonic(), _cpu()
    stop = True
    # Not cancelled: a library's call cut short mid-transaction (ADK over
    # aiosqlite) can leave the database locked for the next window.
    await asyncio.gather(*tasks, return_exceptions=True)
    return clock.window(concurrency, cpu_end - cpu_start)


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
    clock = _Clock(concurrency)
    stop = threading.Event()

    def worker(w: int, call: SyncCall) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            began = time.monotonic()
            try:
                call(i)
            except Exception as exc:  # a peer's error is reported, not fatal
                clock.error(exc)
                time.sleep(0.01)
                continue
            clock.record(w, began, time.monotonic())

    def until(counts: list[int], at_least: float) -> None:
        deadline = time.monotonic() + MAX_PHASE_S
        time.sleep(at_least)
        while not _ready(counts) and time.monotonic() < deadline:
            time.sleep(0.01)

    threads = [
        threading.Thread(target=worker, args=(w, c), daemon=True) for w, c in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
    until(clock.completed, warmup)
    clock.start, cpu_start = time.monotonic(), _cpu()
    until(clock.in_window, seconds)
    clock.end, cpu_end = time.monotonic(), _cpu()
    stop.set()
    for thread in threads:  # blocking calls cannot be cancelled: they finish
        thread.join()
    return clock.window(concurrency, cpu_end - cpu_start)


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
    # For the adapter pairs (bench.peers.adapters): the pair, and "mnemo" or "peer".
    pair: str = ""
    side: str = ""

    def add(self, op: str, mnemo_op: str, concurrency: int, windows: list[Window]) -> None:
        throughputs = [w.throughput for w in windows]
        cpu = [c for w in windows if (c := w.cpu_ms_per_call) is not None]
        self.cells.append(
            {
                "op": op,
                "mnemo_op": mnemo_op,
                "concurrency": concurrency,
                "throughput": statistics.median(throughputs),
                "throughput_spread": [min(throughputs), max(throughputs)],
                "cpu_ms_per_call": statistics.median(cpu) if cpu else None,
                "p50_ms": statistics.median(w.p50_ms for w in windows),
                "p99_ms": statistics.median(w.p99_ms for w in windows),
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
    parser.add_argument("--target", default="", help="a live mnemo serve (the adapter pairs)")
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
