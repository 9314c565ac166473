"""The ``adapters`` workload: Mnemo's framework adapters (``MnemoSession``,
``MnemoStore``, ``MnemoSaver``) beside the libraries they replace, on the same
workload in one run (``bench.peers.adapters``).

Per store, a fresh database and ``mnemo serve`` (this environment's server);
the driver runs in the peers' environment (``.venv-bench``, with the client
installed from ``clients/python``) in a process of its own, against that
server and, on PostgreSQL, a database of its own for the peers in the same
durable cluster. Levels: those of the run among 1 and 16 (all of the run's
when none is).
"""

from __future__ import annotations

import sys
from typing import Any

from bench.peer_cells import missing, peers_python, run_driver, window_options
from bench.plan import Plan
from bench.servers import Databases, serve
from tests.support.pgcluster import libpq_url

LEVELS = (1, 16)
DRIVER_TIMEOUT_S = 900.0


def levels(plan: Plan) -> tuple[int, ...]:
    return tuple(c for c in plan.levels if c in LEVELS) or plan.levels


def run_adapters(plan: Plan, databases: Databases) -> dict[str, Any]:
    """Every pair on every store of ``plan``: ``{"reports": [...], "failures": [...]}``
    (a driver that fails is a failure with the end of its error output; the
    other store still runs)."""
    python = peers_python(plan)
    if not python.exists():
        return missing(python)
    reports: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for store in plan.stores:
        directory = databases.dir / f"adapters-{store}"
        directory.mkdir(exist_ok=True)
        with serve(databases.fresh(store)) as server:
            command = [
                str(python),
                "-m",
                "bench.peers.adapters",
                "--dir",
                str(directory),
                "--target",
                server.target,
                "--stores",
                store,
                *window_options(plan, levels(plan)),
            ]
            if store == "postgres":
                command += ["--postgres", libpq_url(databases.raw("postgres", "adapters_"))]
            print(f"  adapter pairs on {store}", file=sys.stderr, flush=True)
            run_driver(
                f"adapters ({store})", command, directory, reports, failures, DRIVER_TIMEOUT_S
            )
            server.check()
    return {"reports": reports, "failures": failures}
