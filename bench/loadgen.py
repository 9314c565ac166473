"""Load generator: a process of its own that drives one server's operations in
timed windows, on command.

    python -m bench.loadgen --targets A[,B] --workers N [--first-worker K]
                            --ops OP,OP,... [--data-users 16] [--run ID]

It opens one ``grpc.aio`` channel per target, prepares every operation of
``--ops`` for each of its workers (``bench.ops``), prints ``{"ready": true}``
and then reads commands, one JSON object a line, on standard input:

- ``{"op": OP, "start": T0, "end": T1, "targets": [0, 1]}``: every worker
  repeats OP from now (the warm-up) until ``T1``; the calls that complete
  within ``[T0, T1]`` (``time.monotonic()``, the same clock in every process
  of the machine) are counted. Worker ``w`` uses the channel of
  ``targets[w % len(targets)]``. Once every worker is idle it prints one JSON
  object: calls, errors, latency percentiles and its own CPU seconds within
  the window (to see whether the generator itself ran out of CPU).
- ``{"quit": true}``: close and exit.

Workers are closed loops: each sends its next call when the previous one
returned. ``bench.cells`` starts these processes and runs the windows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from typing import Any

import grpc

from bench.ops import OPERATIONS, Operation, Worker

# Enough for a stream of 1,000 messages and the largest import-free reply.
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]


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

    async def window(self, op: str, start: float, end: float, targets: list[int]) -> dict[str, Any]:
        latencies: list[float] = []
        errors: list[str] = []
        cpu: dict[str, float] = {}

        async def sample_cpu() -> None:
            await asyncio.sleep(max(0.0, start - time.monotonic()))
            cpu["start"] = _own_cpu()
            await asyncio.sleep(max(0.0, end - time.monotonic()))
            cpu["end"] = _own_cpu()

        async def worker(w: int) -> None:
            call = self.operations[targets[w % len(targets)]][op][w].call
            while True:
                began = time.monotonic()
                if began >= end:
                    return
                i = self.counters[w]
                self.counters[w] = i + 1
                try:
                    await call(i)
                except (grpc.aio.AioRpcError, RuntimeError) as exc:
                    errors.append(str(exc)[:300])
                    await asyncio.sleep(0.01)
                    continue
                done = time.monotonic()
                if start <= done <= end:
                    latencies.append(done - began)

        await asyncio.gather(sample_cpu(), *(worker(w) for w in self.workers))
        latencies.sort()
        return {
            "op": op,
            "calls": len(latencies),
            "errors": len(errors),
            "first_error": errors[0] if errors else None,
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "loadgen_cpu_s": cpu.get("end", 0.0) - cpu.get("start", 0.0),
        }

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close(None)


async def _serve(args: argparse.Namespace) -> None:
    workers = range(args.first_worker, args.first_worker + args.workers)
    generator = Generator(
        args.targets.split(","), workers, args.ops.split(","), args.data_users, args.run
    )
    await generator.prepare()
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    try:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            command = json.loads(line)
            if command.get("quit"):
                return
            result = await generator.window(
                command["op"], command["start"], command["end"], command.get("targets", [0])
            )
            print(json.dumps(result), flush=True)
    finally:
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
