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


def peers_python(plan: Plan) -> Path:
    """The peers' environment's Python (``plan.peers_python``, relative to the repository)."""
    python = Path(plan.peers_python)
    return python if python.is_absolute() else ROOT / python


def missing(python: Path) -> dict[str, Any]:
    return {"error": f"{python} not found: `make bench` creates the peers' environment"}


def window_options(plan: Plan, levels: tuple[int, ...]) -> list[str]:
    """The harness options every driver takes (``bench.peers.harness.arguments``)."""
    return [
        "--seconds",
        str(plan.peer_seconds),
        "--warmup",
        str(plan.peer_warmup),
        "--repeat",
        str(plan.repeat),
        "--concurrency",
        ",".join(str(c) for c in levels),
    ]


def run_driver(
    name: str,
    command: list[str],
    directory: Path,
    reports: list[dict[str, Any]],
    failures: list[dict[str, str]],
    timeout: float = DRIVER_TIMEOUT_S,
) -> None:
    """Run one driver (HOME in ``directory``, no network names): its JSON
    lines onto ``reports``; a failure or a timeout onto ``failures`` with
    the end of its error output."""
    try:
        done = subprocess.run(
            command,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(directory)},
        )
    except subprocess.TimeoutExpired:
        failures.append({"driver": name, "error": f"timed out after {timeout:.0f} s"})
        return
    sys.stderr.write(done.stderr[-2000:] if done.returncode else "")
    reports += [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode:
        failures.append({"driver": name, "error": done.stderr.strip()[-1500:]})


def run_peers(plan: Plan, databases: Databases) -> dict[str, Any]:
    python = peers_python(plan)
    if not python.exists():
        return missing(python)
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
            *window_options(plan, plan.levels),
            "--stores",
            ",".join(plan.stores),
        ]
        if plan.peers_all_stores:
            command.append("--all-stores")
        if "postgres" in plan.stores:
            command += ["--postgres", libpq_url(databases.raw("postgres", f"peer_{driver}_"))]
        print(f"  peer driver {driver}", file=sys.stderr, flush=True)
        run_driver(driver, command, directory, reports, failures)
    return {"reports": reports, "failures": failures}
