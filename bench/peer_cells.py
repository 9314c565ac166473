"""Runs the peer drivers (``bench/peers``), each in a process of its own with
the peers' environment's Python (``.venv-bench``), and collects their JSON.

A driver that fails is reported with the end of its error output; the other
peers still run. PostgreSQL peers get a database each in the benchmark's
durable cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.plan import Plan
from bench.servers import ROOT, Databases
from tests.support.pgcluster import libpq_url

DRIVERS = ("agents_sessions", "langgraph_store", "adk_sessions", "mem0_memory")
DRIVER_TIMEOUT_S = 600.0


def run_peers(plan: Plan, databases: Databases) -> dict[str, Any]:
    python = Path(plan.peers_python)
    if not python.is_absolute():
        python = ROOT / python
    if not python.exists():
        return {"error": f"{python} not found: `make bench` creates the peers' environment"}
    reports: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for driver in DRIVERS:
        directory = databases.dir / f"peer-{driver}"
        directory.mkdir(exist_ok=True)
        command = [
            str(python),
            "-m",
            f"bench.peers.{driver}",
            "--dir",
            str(directory),
            "--seconds",
            str(plan.peer_seconds),
            "--warmup",
            str(plan.peer_warmup),
            "--repeat",
            str(plan.repeat),
            "--concurrency",
            ",".join(str(c) for c in plan.levels),
            "--stores",
            ",".join(plan.stores),
        ]
        if plan.peers_all_stores:
            command.append("--all-stores")
        if "postgres" in plan.stores:
            command += ["--postgres", libpq_url(databases.raw("postgres", f"peer_{driver}_"))]
        print(f"  peer driver {driver}", file=sys.stderr, flush=True)
        try:
            done = subprocess.run(
                command,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=DRIVER_TIMEOUT_S,
                env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(directory)},
            )
        except subprocess.TimeoutExpired:
            failures.append(
                {"driver": driver, "error": f"timed out after {DRIVER_TIMEOUT_S:.0f} s"}
            )
            continue
        sys.stderr.write(done.stderr[-2000:] if done.returncode else "")
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                reports.append(json.loads(line))
        if done.returncode:
            failures.append({"driver": driver, "error": done.stderr.strip()[-1500:]})
    return {"reports": reports, "failures": failures}
