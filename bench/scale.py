"""Scale workloads: one server process versus two on the same store, and the
server's resident memory idle and after ``--rss-memories`` memories.

- ``run_scale``: two ``mnemo serve`` processes on one database; at concurrency
  16 a load generator drives the empty RPC, an append and a get-state either
  all through A ("one") or split between A and B ("two"), in alternating
  windows. Server CPU per request sums the CPU of the processes that served.
  With two processes on a 2-core machine, the CPU per request should stay
  within 10% of one process's.
- ``run_rss``: a fresh database and server; RSS after start, after importing
  ``memories`` memories (``ImportUserData``, 10 users), and after a window of
  recall and get-memory over them.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from bench import dataset
from bench.cells import Cell, Loadgens
from bench.plan import Plan
from bench.servers import Databases, rss_bytes, serve
from bench.shapes import data_user

SCALE_OPS = ("empty", "append", "get-state")
SCALE_CONCURRENCY = 16
RSS_USERS = 10


def run_scale(plan: Plan, databases: Databases, store: str, run: str) -> list[dict[str, Any]]:
    url = databases.fresh(store)
    cells: dict[tuple[str, int], Cell] = {
        (op, n): Cell(op, SCALE_CONCURRENCY) for op in SCALE_OPS for n in (1, 2)
    }
    with serve(url) as a, serve(url) as b:
        with Loadgens(
            [a.target, b.target], SCALE_CONCURRENCY, list(SCALE_OPS), run=f"{run}scale"
        ) as loadgens:
            for _round in range(plan.repeat):
                for servers, targets in (([a.pid], [0]), ([a.pid, b.pid], [0, 1])):
                    n = len(servers)
                    base = loadgens.window("empty", servers, plan.seconds, plan.warmup, targets)
                    for op in SCALE_OPS:
                        sample = (
                            base
                            if op == "empty"
                            else loadgens.window(op, servers, plan.seconds, plan.warmup, targets)
                        )
                        cells[(op, n)].samples.append(sample)
                        cells[(op, n)].baselines.append(base)
    out = []
    for (op, n), cell in cells.items():
        out.append(cell.as_json() | {"servers": n})
        print(
            f"  scale {op:10} servers={n} {cell.median('throughput'):7.0f}/s "
            f"cpu {cell.median('cpu_ms_per_call'):.2f} ms",
            file=sys.stderr,
            flush=True,
        )
    return out


def run_rss(plan: Plan, databases: Databases, store: str, run: str) -> dict[str, Any]:
    url = databases.fresh(store)
    per_user = max(1, plan.rss_memories // RSS_USERS)
    users = [data_user(k) for k in range(RSS_USERS)]
    with serve(url) as server:
        time.sleep(1.0)
        idle = rss_bytes(server.pid)
        load_s = dataset.load(server.target, users, memories=per_user, messages=0)
        loaded = rss_bytes(server.pid)
        with Loadgens(
            [server.target], 16, ["recall", "get-memory"], data_users=RSS_USERS, run=f"{run}rss"
        ) as loadgens:
            for op in ("recall", "get-memory"):
                loadgens.window(op, [server.pid], plan.seconds, plan.warmup)
        used = rss_bytes(server.pid)
    result = {
        "store": store,
        "memories": per_user * RSS_USERS,
        "users": RSS_USERS,
        "load_seconds": load_s,
        "rss_idle_bytes": idle,
        "rss_loaded_bytes": loaded,
        "rss_after_reads_bytes": used,
    }
    print(f"  rss {result}", file=sys.stderr, flush=True)
    return result
