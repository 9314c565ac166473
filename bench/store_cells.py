"""The store workloads: every selected operation at every concurrency on one
server, each window beside a baseline window of the empty unary RPC.

For each concurrency, one set of load-generator processes runs ``repeat``
rounds; a round is, for each group of ``ops_per_baseline`` operations,
``[empty, op1, op2]``. Each operation's sample is paired with the baseline
window just before it, so the ratios of a round compare windows a second or
two apart (noise on this shared machine hits both).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from bench.cells import Cell, Loadgens
from bench.plan import DATA_OPS, EMBEDDING_OPS, RECALL_OPS, Plan
from bench.servers import Server


def _groups(ops: list[str], size: int) -> list[list[str]]:
    return [ops[i : i + size] for i in range(0, len(ops), max(1, size))]


Settle = Callable[[], None]
"""Waits until the server's background embedding has drained
(``bench.dataset.wait_embedded``)."""


def run_level(
    plan: Plan, server: Server, concurrency: int, run: str, settle: Settle | None = None
) -> dict[str, Cell]:
    """Every store op of the plan at one concurrency: ``{op: Cell}`` (``empty`` too).
    ``settle`` runs before each window of a call that embeds its query, so that the server's
    model embedding entries saved earlier (the imported data, the write
    cells' memories) does not share the cores with it."""
    ops = plan.store_ops
    cells = {op: Cell(op, concurrency) for op in ["empty", *ops]}
    processes = plan.processes(concurrency)
    with Loadgens(
        [server.target],
        concurrency,
        ["empty", *ops],
        processes=processes,
        data_users=plan.data_users,
        run=f"{run}c{concurrency}",
    ) as loadgens:
        for _round in range(plan.repeat):
            for group in _groups(ops, plan.ops_per_baseline) or [[]]:
                server.check()
                base = loadgens.window("empty", [server.pid], plan.seconds, plan.warmup)
                cells["empty"].samples.append(base)
                cells["empty"].baselines.append(base)
                for op in group:
                    if settle is not None and op in EMBEDDING_OPS:
                        settle()
                    sample = loadgens.window(op, [server.pid], plan.seconds, plan.warmup)
                    cells[op].samples.append(sample)
                    cells[op].baselines.append(base)
    for cell in cells.values():
        print(
            f"  c{concurrency:<3} {cell.op:15} {cell.median('throughput'):8.0f}/s  "
            f"x{cell.ratio('throughput'):.2f}  cpu {cell.median('cpu_ms_per_call'):6.2f} ms "
            f"(x{cell.ratio('cpu_ms_per_call'):.2f})  errors {cell.errors}",
            file=sys.stderr,
            flush=True,
        )
    return cells


def needs_data(plan: Plan) -> bool:
    return any(op in DATA_OPS for op in plan.store_ops)


def needs_recall_user(plan: Plan) -> bool:
    return any(op in RECALL_OPS for op in plan.store_ops)


def run_store(
    plan: Plan,
    server: Server,
    run: str,
    out: list[dict[str, Any]],
    settle: Settle | None = None,
) -> None:
    """All levels; the cells as JSON appended to ``out`` level by level (what
    was measured stays if a later level fails)."""
    for concurrency in plan.levels:
        cells = run_level(plan, server, concurrency, run, settle)
        processes = plan.processes(concurrency)
        for cell in cells.values():
            out.append(cell.as_json() | {"loadgen_processes": processes})
