"""``make bench-embedding``: what background embedding costs and how fast
vectors arrive, with the default embedder (``local``) beside ``none`` in the
same run, SQLite, one ``mnemo serve`` process per cell.

- **one at a time**: ``--saves`` CreateMemory calls, one every 50 ms; for each,
  the time from its acknowledgement until its vector is stored (read from the
  database every 2 ms by this process): p50, p99, max.
- **c16 saves**: 16 concurrent callers (``grpc.aio``) save short facts for
  ``--seconds``; calls per second with ``none`` and with ``local``, and the
  ratio. The backlog this leaves behind then drains: its size at the end of
  the load and the drain rate (entries per second, from the
  ``mnemo_embedded_entries_total`` metric over the drain).
- **bulk import**: ``--bulk`` entries without vectors through
  BatchCreateMemories (1,000 per call, as ``mnemo import --memories``):
  entries per second acknowledged with ``none`` and with ``local``; then the
  time until ``local`` has embedded them all, with the progress
  ``mnemo embeddings`` shows half-way.
- **idle RSS** of the ``local`` server with its model loaded, after the
  above.

    python bench/embedding_backlog.py [--saves 200] [--seconds 10] [--bulk 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.servers import Databases, cpu_seconds, free_port, rss_bytes, serve  # noqa: E402
from mnemo.v1 import memories_pb2 as mm  # noqa: E402
from mnemo.v1 import memories_pb2_grpc as mm_grpc  # noqa: E402
from tests.support.memory_corpus import Corpus  # noqa: E402

CONCURRENCY = 16


def _path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def _vector_stored(db: sqlite3.Connection, memory_id: str) -> bool:
    row = db.execute(
        "SELECT 1 FROM memory_embeddings e JOIN memories m ON m.id = e.memory_pk "
        "WHERE m.user_id = 'one' AND m.memory_id = ?",
        (memory_id,),
    ).fetchone()
    return row is not None


def _backlog(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM embedding_backlog").fetchone()[0])


def _embedded_total(metrics_port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("mnemo_embedded_entries_total "):
                return float(line.split()[1])
    return 0.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def one_at_a_time(databases: Databases, saves: int, corpus: Corpus) -> str:
    url = databases.fresh("sqlite")
    texts = [corpus.sentence() for _ in range(saves)]
    delays: list[float] = []
    with serve(url, extra_env={"MNEMO_EMBEDDER": "local"}) as server:
        db = sqlite3.connect(_path(url), timeout=30)
        with grpc.insecure_channel(server.target) as channel:
            stub = mm_grpc.MemoryServiceStub(channel)
            for i, text in enumerate(texts):
                memory_id = f"m{i}"
                stub.CreateMemory(
                    mm.CreateMemoryRequest(
                        parent="users/one", memory_id=memory_id, memory=mm.Memory(text=text)
                    ),
                    timeout=30,
                )
                acknowledged = time.perf_counter()
                while not _vector_stored(db, memory_id):
                    time.sleep(0.002)
                delays.append(time.perf_counter() - acknowledged)
                time.sleep(0.05)
        db.close()
    ms = [d * 1000 for d in delays]
    return (
        f"| saves one at a time, {saves}: vector stored after ack | p50 {_percentile(ms, 0.5):.0f} ms "
        f"| p99 {_percentile(ms, 0.99):.0f} ms | max {max(ms):.0f} ms |"
    )


async def _c16_saves(target: str, seconds: float, texts: list[str], prefix: str) -> int:
    completed = 0
    deadline = time.perf_counter() + seconds
    async with grpc.aio.insecure_channel(target) as channel:
        stub = mm_grpc.MemoryServiceStub(channel)

        async def caller(worker: int) -> None:
            nonlocal completed
            n = worker
            while time.perf_counter() < deadline:
                await stub.CreateMemory(
                    mm.CreateMemoryRequest(
                        parent=f"users/{prefix}{worker}",
                        memory=mm.Memory(text=texts[n % len(texts)]),
                    ),
                    timeout=60,
                )
                n += CONCURRENCY
                completed += 1

        await asyncio.gather(*(caller(w) for w in range(CONCURRENCY)))
    return completed


def c16(databases: Databases, seconds: float, corpus: Corpus) -> list[str]:
    rates: dict[str, float] = {}
    cpu: dict[str, float] = {}
    drain = ""
    texts = [corpus.sentence() for _ in range(5000)]
    for embedder in ("none", "local"):
        url = databases.fresh("sqlite")
        metrics_port = free_port()
        env = {"MNEMO_EMBEDDER": embedder, "MNEMO_METRICS_LISTEN": f"127.0.0.1:{metrics_port}"}
        with serve(url, extra_env=env) as server:
            asyncio.run(_c16_saves(server.target, 1.0, texts, "warm"))
            started_cpu = cpu_seconds(server.pid)
            started = time.perf_counter()
            done = asyncio.run(_c16_saves(server.target, seconds, texts, "u"))
            elapsed = time.perf_counter() - started
            rates[embedder] = done / elapsed
            cpu[embedder] = (cpu_seconds(server.pid) - started_cpu) / done * 1000
            if embedder == "local":
                db = sqlite3.connect(_path(url), timeout=30)
                left = _backlog(db)
                before, drain_started = _embedded_total(metrics_port), time.perf_counter()
                while _backlog(db):
                    time.sleep(0.05)
                drained = time.perf_counter() - drain_started
                rate = (_embedded_total(metrics_port) - before) / max(drained, 1e-9)
                db.close()
                drain = (
                    f"| backlog after {seconds:.0f} s of c16 saves | {left:,} entries "
                    f"| drained in {drained:.1f} s | {rate:,.0f} entries/s |"
                )
    return [
        f"| CreateMemory c16, --embedder none | {rates['none']:,.0f} calls/s "
        f"| server CPU {cpu['none']:.2f} ms/call | |",
        f"| CreateMemory c16, --embedder local | {rates['local']:,.0f} calls/s "
        f"| server CPU {cpu['local']:.2f} ms/call (saves only) "
        f"| {rates['local'] / rates['none']:.2f} of none |",
        drain,
    ]


def _batches(count: int, corpus: Corpus) -> list[mm.BatchCreateMemoriesRequest]:
    texts = [corpus.sentence() for _ in range(count)]
    return [
        mm.BatchCreateMemoriesRequest(
            parent="users/bulk",
            requests=[
                mm.CreateMemoryRequest(parent="users/bulk", memory=mm.Memory(text=texts[start + i]))
                for i in range(min(1000, count - start))
            ],
        )
        for start in range(0, count, 1000)
    ]


def bulk(databases: Databases, count: int, corpus: Corpus) -> tuple[list[str], float]:
    lines: list[str] = []
    rates: dict[str, float] = {}
    rss = 0.0
    for embedder in ("none", "local"):
        url = databases.fresh("sqlite")
        requests = _batches(count, corpus)
        with serve(url, extra_env={"MNEMO_EMBEDDER": embedder}) as server:
            with grpc.insecure_channel(server.target) as channel:
                stub = mm_grpc.MemoryServiceStub(channel)
                started = time.perf_counter()
                for request in requests:
                    stub.BatchCreateMemories(request, timeout=600)
                rates[embedder] = count / (time.perf_counter() - started)
            if embedder == "local":
                db = sqlite3.connect(_path(url), timeout=30)
                drain_started = time.perf_counter()
                progress = ""
                while left := _backlog(db):
                    if not progress and left <= count // 2:
                        progress = subprocess.run(
                            [
                                sys.executable,
                                "-m",
                                "mnemo_server",
                                "embeddings",
                                "--database-url",
                                url,
                            ],
                            cwd=ROOT,
                            capture_output=True,
                            text=True,
                            check=True,
                        ).stdout.strip()
                    time.sleep(0.1)
                drained = time.perf_counter() - drain_started
                db.close()
                time.sleep(2.0)
                rss = rss_bytes(server.pid) / 2**20
                lines.append(
                    f"| bulk import then embedding, {count:,} entries | embedded in "
                    f"{drained:.0f} s after the import | {count / drained:,.0f} entries/s | |"
                )
                lines.append("")
                lines.append("`mnemo embeddings` half-way:")
                lines.append("")
                lines.append("```")
                lines.append(progress)
                lines.append("```")
    lines.insert(
        0,
        f"| bulk import (BatchCreateMemories, 1,000 per call), {count:,} entries "
        f"| none {rates['none']:,.0f} entries/s | local {rates['local']:,.0f} entries/s "
        f"| {rates['local'] / rates['none']:.2f} of none |",
    )
    return lines, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bulk", type=int, default=20_000)
    args = parser.parse_args()
    corpus = Corpus(seed=7)
    print("| what | | | |")
    print("|---|---|---|---|")
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        print(one_at_a_time(databases, args.saves, corpus), flush=True)
        for line in c16(databases, args.seconds, corpus):
            print(line, flush=True)
        lines, rss = bulk(databases, args.bulk, corpus)
        print(f"| idle RSS, --embedder local, model loaded | {rss:.0f} MiB | | |")
        for line in lines:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
