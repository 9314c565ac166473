"""Load generator: runs in its own process and drives one operation against a server.

Usage: ``python -m bench.loadgen TARGET OP CONCURRENCY SECONDS`` prints one JSON
object with the call count, throughput and latency percentiles. Each worker
owns its user and conversation (except ``append-shared``, where all workers
append to one conversation), so the figures measure the server and store, not
contention between workers, unless the operation asks for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import (
    conversations_pb2,
    conversations_pb2_grpc,
    working_memory_pb2,
    working_memory_pb2_grpc,
)

Call = Callable[[int], Awaitable[object]]


def _call(awaitable: Any) -> Awaitable[object]:
    """The generated aio stubs are untyped; every call returns an awaitable."""
    result: Awaitable[object] = awaitable
    return result


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def _operation(channel: grpc.aio.Channel, op: str, worker: int, run: str) -> Call:
    """The call one worker repeats; its argument is the iteration number."""
    user = f"bench-{run}-{worker}"
    if op == "baseline":
        health = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest()
        return lambda _i: _call(health.Check(request))
    memory = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    state_name = f"users/{user}/conversations/c/memoryState"
    if op == "get":
        request_get = working_memory_pb2.GetMemoryStateRequest(name=state_name)
        return lambda _i: _call(memory.GetMemoryState(request_get))
    if op == "remember":

        def remember(i: int) -> Awaitable[object]:
            return _call(
                memory.RememberExchange(
                    working_memory_pb2.RememberExchangeRequest(
                        name=state_name,
                        exchange=working_memory_pb2.Exchange(
                            ask=f"question {i}", answer=f"answer {i}"
                        ),
                        request_id=f"{user}-{i}",
                    )
                )
            )

        return remember
    if op in ("append", "append-shared"):
        history = conversations_pb2_grpc.ConversationServiceStub(channel)
        owner = f"bench-{run}-shared" if op == "append-shared" else user
        conversation = f"users/{owner}/conversations/c"

        def append(i: int) -> Awaitable[object]:
            message = json.dumps({"role": "user", "content": f"message {worker}/{i}"})
            return _call(
                history.AppendMessages(
                    conversations_pb2.AppendMessagesRequest(
                        conversation=conversation,
                        messages=[conversations_pb2.HistoryMessage(message_json=message)],
                        run_id="bench",
                        request_id=f"{user}-{i}",
                    )
                )
            )

        return append
    raise SystemExit(f"unknown operation {op!r}")


async def _prepare(channel: grpc.aio.Channel, op: str, concurrency: int, run: str) -> None:
    """Give ``get`` something to read: one full state per worker."""
    if op != "get":
        return
    memory = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    for worker in range(concurrency):
        name = f"users/bench-{run}-{worker}/conversations/c/memoryState"
        for i in range(3):
            await memory.RememberExchange(
                working_memory_pb2.RememberExchangeRequest(
                    name=name,
                    exchange=working_memory_pb2.Exchange(ask=f"q{i}", answer=f"a{i}"),
                )
            )


async def drive(target: str, op: str, concurrency: int, seconds: float) -> dict[str, object]:
    """Run ``concurrency`` workers for ``seconds`` (after a short warm-up)."""
    run = uuid.uuid4().hex[:8]
    async with grpc.aio.insecure_channel(target) as channel:
        await _prepare(channel, op, concurrency, run)
        latencies: list[float] = []
        errors = 0
        warmup_end = time.perf_counter() + min(1.0, seconds / 4)
        deadline = warmup_end + seconds

        async def worker(index: int) -> None:
            nonlocal errors
            call = _operation(channel, op, index, run)
            i = 0
            while True:
                start = time.perf_counter()
                if start >= deadline:
                    return
                try:
                    await call(i)
                except grpc.aio.AioRpcError:
                    errors += 1
                end = time.perf_counter()
                if start >= warmup_end:
                    latencies.append(end - start)
                i += 1

        await asyncio.gather(*(worker(n) for n in range(concurrency)))
    latencies.sort()
    return {
        "op": op,
        "concurrency": concurrency,
        "calls": len(latencies),
        "errors": errors,
        "throughput": len(latencies) / seconds,
        "p50_ms": _percentile(latencies, 0.50) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
        "pid": os.getpid(),
    }


def main(argv: list[str]) -> None:
    target, op, concurrency, seconds = argv[0], argv[1], int(argv[2]), float(argv[3])
    print(json.dumps(asyncio.run(drive(target, op, concurrency, seconds))))


if __name__ == "__main__":
    main(sys.argv[1:])
