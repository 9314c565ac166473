"""Load generator: a process of its own that drives one server's operations in
timed windows, on command.

    python -m bench.loadgen --targets A[,B] --workers N [--first-worker K]
                            --ops OP,OP,... [--data-users 16] [--run ID]

It opens one ``grpc.aio`` channel per target, prepares every operation of
``--ops`` for each of its workers (``bench.ops``), prints ``{"ready": true}``
and then follows commands, one JSON object a line on standard input, each
answered by one JSON line on standard output:

1. ``{"op": OP, "warmup": W, "seconds": S, "targets": [0, 1]}``: every worker
   starts repeating OP (worker ``w`` on the channel of
   ``targets[w % len(targets)]``). Once ``W`` seconds have passed *and* every
   worker has completed a call (the steady state of a closed loop; at high
   concurrency a slow call takes longer than any fixed warm-up), it answers
   ``{"warm": true}``.
2. ``{"measure": true}``: the measured window starts. Once ``S`` seconds have
   passed and every worker has completed a call within the window, it
   answers ``{"satisfied": true}``.
3. ``{"stop": true}``: the window ends; the calls still in flight are
   cancelled (the next window's warm-up absorbs what the server still does
   for them), and it answers with the window's figures: the calls completed
   within it, their latencies, the throughput by Little's law (workers ÷ mean
   latency: exact for a closed loop, where counting completions in a window
   shorter than a few latencies is not) and its own CPU seconds.

Each phase is bounded by ``MAX_PHASE_S``. ``{"quit": true}`` closes and
exits. ``bench.cells`` starts these processes and runs the windows; it reads
the servers' CPU time between ``measure`` and ``stop``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from bench.ops import OPERATIONS, Operation, Worker

# Enough for a stream of 1,000 messages and the largest import-free reply.
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
# Bounds each phase of a window (warm-up, measuring).
MAX_PHASE_S = 20.0


def percentile(ordered: list[float], fraction: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


class Generator:
    """The workers of this process, their prepared operations per target."""

    def __init__(
        self, targets: list[str], workers: range, ops: list[str], data_users: int, run: str
    ):
        self.channels = [grpc.aio.insecure_channel(t, options=CHANNEL_OPTIONS) for t in targets]
        self.workers = workers
        self.counters = dict.fromkeys(workers, 0)
        # operations[target][op][worker]
        self.operations: list[dict[str, dict[int, Operation]]] = [
            {
                op: {w: OPERATIONS[op](Worker(channel, w, run, data_users)) for w in workers}
                for op in ops
            }
            for channel in self.channels
        ]

    async def prepare(self) -> None:
        for per_op in self.operations:
            for per_worker in per_op.values():
                for operation in per_worker.values():
                    if operation.prepare is not None:
                        await operation.prepare()

    async def window(
        self,
        op: str,
        targets: list[int],
        warmup: float,
        seconds: float,
        commands: asyncio.Queue[dict[str, Any]],
    ) -> dict[str, Any]:
        """One window, driven by ``commands`` (``measure``, then ``stop``)."""
        latencies: list[float] = []
        errors: list[str] = []
        completed = dict.fromkeys(self.workers, 0)
        in_window = dict.fromkeys(self.workers, 0)
        state = {"start": float("inf"), "end": float("inf")}
        progress = asyncio.Event()

        async def worker(w: int) -> None:
            call = self.operations[targets[w % len(targets)]][op][w].call
            while True:
                began = time.monotonic()
                i = self.counters[w]
                self.counters[w] = i + 1
                try:
                    await call(i)
                except (grpc.aio.AioRpcError, RuntimeError) as exc:
                    errors.append(str(exc)[:300])
                    await asyncio.sleep(0.01)
                    continue
                done = time.monotonic()
                completed[w] += 1
                if state["start"] <= done <= state["end"]:
                    latencies.append(done - began)
                    in_window[w] += 1
                progress.set()

        async def until(condition: Callable[[], bool], at_least: float) -> None:
            deadline = time.monotonic() + MAX_PHASE_S
            await asyncio.sleep(at_least)
            while not condition() and time.monotonic() < deadline:
                progress.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(progress.wait(), 0.05)

        tasks = [asyncio.create_task(worker(w)) for w in self.workers]
        try:
            await until(lambda: all(completed.values()), warmup)
            _reply({"warm": True})
            await _expect(commands, "measure")
            state["start"] = time.monotonic()
            cpu_start = _own_cpu()
            await until(lambda: all(in_window.values()), seconds)
            _reply({"satisfied": True})
            await _expect(commands, "stop")
            state["end"] = time.monotonic()
            cpu_end = _own_cpu()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        window = state["end"] - state["start"]
        counted = len(latencies) / window if window else 0.0
        every = all(in_window.values())
        mean = statistics.fmean(latencies) if latencies else 0.0
        latencies.sort()
        return {
            "op": op,
            "workers": len(self.workers),
            "calls": len(latencies),
            "window_s": window,
            "counted_throughput": counted,
            # Little's law, unless a worker completed nothing within the
            # window's bound (then the count is the better estimate).
            "throughput": (len(self.workers) / mean if mean else 0.0) if every else counted,
            "every_worker": every,
            "mean_ms": mean * 1000,
            "errors": len(errors),
            "first_error": errors[0] if errors else None,
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "loadgen_cpu_s": cpu_end - cpu_start,
        }

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close(None)


def _reply(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


async def _expect(commands: asyncio.Queue[dict[str, Any]], key: str) -> None:
    command = await commands.get()
    if not command.get(key):
        raise RuntimeError(f"expected {key!r}, got {command}")


async def _read_commands(commands: asyncio.Queue[dict[str, Any]]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        await commands.put(json.loads(line) if line.strip() else {"quit": True})
        if not line:
            return


async def _serve(args: argparse.Namespace) -> None:
    workers = range(args.first_worker, args.first_worker + args.workers)
    generator = Generator(
        args.targets.split(","), workers, args.ops.split(","), args.data_users, args.run
    )
    await generator.prepare()
    commands: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    reader = asyncio.create_task(_read_commands(commands))
    _reply({"ready": True, "pid": os.getpid()})
    try:
        while True:
            command = await commands.get()
            if command.get("quit"):
                return
            result = await generator.window(
                command["op"],
                command.get("targets", [0]),
                command["warmup"],
                command["seconds"],
                commands,
            )
            _reply(result)
    finally:
        reader.cancel()
        await generator.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--targets", required=True, help="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--workers", type=int, required=True, help="workers of this process")
    parser.add_argument("--first-worker", type=int, default=0, help="index of the first worker")
    parser.add_argument("--ops", required=True, help="operations to prepare (bench.ops)")
    parser.add_argument("--data-users", type=int, default=16)
    parser.add_argument("--run", default=uuid.uuid4().hex[:8], help="names the writers' users")
    asyncio.run(_serve(parser.parse_args()))


if __name__ == "__main__":
    main()
