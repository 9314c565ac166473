"""``make bench``: Mnemo's benchmarks in one run, written to
``docs/benchmarks.md`` (tables) and ``docs/benchmarks.json`` (raw figures).

For each store (a SQLite file; a database in a throwaway PostgreSQL cluster
that is durable like production) a fresh database is migrated (``mnemo
migrate``), a ``mnemo serve`` process started and the data set imported
through the API (``bench.dataset``). Load generators in their own processes
(``bench.loadgen``) drive each operation at each concurrency in bounded,
repeated windows, each beside a window of the empty unary RPC on the same
server; the server's CPU time is read before and after every window. Then the
scale, RSS, watch and peer workloads (``bench.plan`` lists them all).

    python -m bench.run [--only WORKLOADS] [--stores sqlite,postgres]
                        [--concurrency 1,16,64] [--seconds S] [--repeat N] ...

``--help`` lists every option. ``--profile OP`` instead runs ``bench.profile``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: python bench/run.py
    sys.path.insert(0, str(ROOT))

from bench import dataset, machine, plan, report  # noqa: E402
from bench.adapter_cells import run_adapters  # noqa: E402
from bench.peer_cells import run_peers  # noqa: E402
from bench.scale import run_rss, run_scale  # noqa: E402
from bench.servers import Databases, ServerExited, serve  # noqa: E402
from bench.shapes import data_user  # noqa: E402
from bench.store_cells import needs_data, needs_recall_user, run_store  # noqa: E402


def _say(text: str) -> None:
    print(f"==> {text}", file=sys.stderr, flush=True)


def _watch(databases: Databases, store: str, samples: int) -> dict[str, Any]:
    """``bench.watch`` in a process of its own, on a fresh database."""
    url = databases.fresh(store)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.watch",
            "--database-url",
            url,
            "--backend",
            store,
            "--samples",
            str(samples),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        return {"store": store, "error": done.stderr.strip()[-1500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _neighbour(p: plan.Plan, command: str) -> dict[str, Any]:
    """``bench.neighbour`` in a process of its own (it starts its own servers)."""
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-neighbour-") as tmp:
        out = Path(tmp) / "neighbour.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.neighbour",
                "--stores",
                ",".join(p.stores),
                "--calls",
                str(p.neighbour_calls),
                "--json",
                str(out),
                "--command",
                command,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if not out.exists():
            return {"command": command, "error": done.stderr.strip()[-1500:], "results": []}
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def _failure(what: str) -> dict[str, str]:
    """A workload that failed: recorded in the results, and the run goes on."""
    text = traceback.format_exc()
    print(text, file=sys.stderr, flush=True)
    return {"error": f"{what}: {text.strip().splitlines()[-1]}"}


def _store_cells(p: plan.Plan, databases: Databases, store: str, run: str) -> dict[str, Any]:
    """The store cells on a fresh database and server; once more on another
    fresh one if the server ended by itself (on this shared machine one was
    seen to receive a termination signal from outside)."""
    entry: dict[str, Any] = {}
    for attempt in (1, 2):
        previous = entry.get("error")
        entry = {"cells": [], "attempt": attempt}
        if previous:
            entry["retried_after"] = previous
        try:
            url = databases.fresh(store)
            with serve(url) as server:
                try:
                    if needs_data(p):
                        users = [data_user(k) for k in range(p.data_users)]
                        entry["load_seconds"] = dataset.load(server.target, users)
                        entry["data_users"] = p.data_users
                    if needs_recall_user(p):
                        entry["recall_load_seconds"] = dataset.load_recall_user(server.target)
                    settle = functools.partial(dataset.wait_embedded, url)
                    run_store(p, server, run, entry["cells"], settle)
                except Exception:
                    server.check()  # a server that ended explains the failure
                    raise
            return entry
        except ServerExited:
            entry |= _failure(f"{store} store cells")
        except Exception:
            return entry | _failure(f"{store} store cells")
    return entry


def measure(p: plan.Plan, command: str) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    results: dict[str, Any] = {
        "command": command,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine.describe(),
        "load_average_before": machine.load_average(),
        "plan": p.__dict__ | {"store_ops": p.store_ops},
        "stores": {},
        "scale": [],
        "rss": [],
        "watch": [],
        "peers": None,
        "timings": {},
    }
    started = time.monotonic()
    timings: dict[str, float] = results["timings"]

    def lap(name: str, since: float) -> float:
        now = time.monotonic()
        timings[name] = round(timings.get(name, 0.0) + now - since, 1)
        return now

    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        if "postgres" in p.stores:
            results["postgres_version"] = databases.postgres.version
        if "citus" in p.stores:
            results["citus_version"] = databases.citus.citus_version
        mark = time.monotonic()
        for store in p.stores if p.store_ops else ():
            _say(f"{store}: store cells")
            entry = _store_cells(p, databases, store, run)
            results["stores"][store] = entry
            mark = lap(f"store cells ({store})", mark)
        for store in p.stores:
            if "scale" in p.workloads:
                _say(f"{store}: one server process versus two")
                try:
                    cells = run_scale(p, databases, store, run)
                    results["scale"].append({"store": store, "cells": cells})
                except Exception:
                    results["scale"].append({"store": store, "cells": []} | _failure("scale"))
                mark = lap("scale", mark)
            if "rss" in p.workloads and store in p.rss_stores:
                _say(f"{store}: RSS")
                try:
                    results["rss"].append(run_rss(p, databases, store, run))
                except Exception:
                    results["rss"].append({"store": store} | _failure("rss"))
                mark = lap("rss", mark)
            if "watch" in p.workloads:
                _say(f"{store}: watch propagation")
                results["watch"].append(_watch(databases, store, p.watch_samples))
                mark = lap("watch", mark)
        if "neighbour" in p.workloads:
            _say("noisy neighbour")
            results["neighbour"] = _neighbour(p, command)
            mark = lap("neighbour", mark)
        if "peers" in p.workloads:
            _say("peers")
            try:
                results["peers"] = run_peers(p, databases)
            except Exception:
                results["peers"] = _failure("peers")
            mark = lap("peers", mark)
        if "adapters" in p.workloads:
            _say("adapter pairs")
            try:
                results["adapters"] = run_adapters(p, databases)
            except Exception:
                results["adapters"] = _failure("adapters")
            lap("adapters", mark)
    results["load_average_after"] = machine.load_average()
    results["wall_seconds"] = time.monotonic() - started
    return results


def merged(page: dict[str, Any], run: dict[str, Any], p: plan.Plan) -> dict[str, Any]:
    """``page`` (the results of the run on the page) with ``run``'s store
    cells in place of its cells of the same operations, and without the
    cells of operations no workload has any more; each merged cell names its
    run, and ``merged_runs`` lists the runs merged (the report says so)."""
    current = {op for ops in plan.STORE_WORKLOADS.values() for op in ops} | {"empty"}
    replaced = set(p.store_ops)
    for store, entry in run["stores"].items():
        target = page["stores"].setdefault(store, {"cells": []})
        kept = [
            c for c in target.get("cells", []) if c["op"] in current and c["op"] not in replaced
        ]
        new = [
            c | {"run": run["started"]}
            for c in entry.get("cells", [])
            if c["op"] in replaced and c["op"] != "empty"
        ]
        target["cells"] = kept + new
        for key in ("recall_load_seconds", "error"):
            if key in entry:
                target[key] = entry[key]
    page.setdefault("merged_runs", []).append(
        {
            "command": run["command"],
            "started": run["started"],
            "ops": [op for op in p.store_ops if op != "empty"],
            "stores": list(run["stores"]),
            "machine": run["machine"],
            "load_average_before": run["load_average_before"],
            "load_average_after": run["load_average_after"],
            "wall_seconds": run["wall_seconds"],
        }
    )
    return page


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    plan.add_arguments(parser)
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, default=ROOT / "docs" / "benchmarks.json")
    parser.add_argument(
        "--adapters-markdown", type=Path, default=ROOT / "docs" / "benchmarks-adapters.md"
    )
    parser.add_argument(
        "--adapters-json", type=Path, default=ROOT / "docs" / "benchmarks-adapters.json"
    )
    parser.add_argument("--command", default="", help="the command to show in the report")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="put this run's store cells into the page and JSON of the run recorded there, in "
        "place of its cells of the same operations (the report names the runs merged)",
    )
    parser.add_argument("--profile", metavar="OP", help="profile one operation (bench.profile)")
    args, rest = parser.parse_known_args()
    if args.profile:
        from bench import profile

        profile.main([args.profile, *rest])
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    p = plan.from_arguments(args)
    command = args.command or "python -m bench.run " + shlex.join(sys.argv[1:])
    results = measure(p, command)
    if "adapters" in results:  # their own page: a run of them alone leaves the main one be
        args.adapters_json.write_text(json.dumps(results, indent=1) + "\n")
        args.adapters_markdown.write_text(report.render_adapters(results))
        _say(f"wrote {args.adapters_markdown} and {args.adapters_json}")
        if p.workloads == ("adapters",):
            return
    wall = results["wall_seconds"]
    if args.merge:
        results = merged(json.loads(args.json.read_text()), results, p)
    results["raw_figures"] = args.json.name
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.markdown.write_text(report.render(results, report.citus_run(args.markdown)))
    _say(f"wrote {args.markdown} and {args.json} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
