"""A profile of the server under one operation's load, to attach to a claim.

    make bench-profile ARGS="append --store postgres --concurrency 16 --seconds 10"
    python -m bench.profile OP [--store sqlite] [--concurrency 16] [--seconds 10]
                               [--format speedscope|raw|flamegraph] [--output FILE] [--gil]

A fresh migrated database, a ``mnemo serve`` process (the data set imported
when OP reads it) and a load generator driving OP; ``py-spy record`` (pinned
in ``bench/peers/requirements.txt``, from ``.venv-bench``) samples the
server process for the measured window. The output defaults to
``bench/results/profile-OP-STORE.<ext>`` (git-ignored): open a speedscope
file at https://www.speedscope.app, a raw one with ``flamegraph.pl``.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
from pathlib import Path

from bench import dataset
from bench.cells import Loadgens
from bench.ops import OPERATIONS
from bench.plan import DATA_OPS, RECALL_OPS
from bench.servers import ROOT, Databases, serve
from bench.shapes import DATA_USERS, data_user

EXTENSIONS = {"speedscope": "speedscope.json", "raw": "txt", "flamegraph": "svg"}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("op", choices=sorted(OPERATIONS))
    parser.add_argument("--store", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--format", default="speedscope", choices=sorted(EXTENSIONS))
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--gil",
        action="store_true",
        help="only samples of a thread holding the GIL (where Python spends CPU)",
    )
    parser.add_argument("--py-spy", default=str(ROOT / ".venv-bench" / "bin" / "py-spy"))
    args = parser.parse_args(argv)
    output = args.output or ROOT / "bench" / "results" / (
        f"profile-{args.op}-{args.store}.{EXTENSIONS[args.format]}"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    if not Path(args.py_spy).exists():
        raise SystemExit(f"{args.py_spy} not found: `make bench-profile` installs it (.venv-bench)")
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        server = stack.enter_context(serve(databases.fresh(args.store)))
        if args.op in DATA_OPS:
            dataset.load(server.target, [data_user(k) for k in range(DATA_USERS)])
        if args.op in RECALL_OPS:
            dataset.load_recall_user(server.target)
        loadgens = stack.enter_context(Loadgens([server.target], args.concurrency, [args.op]))
        spy = subprocess.Popen(
            [
                args.py_spy,
                "record",
                "--pid",
                str(server.pid),
                "--duration",
                str(int(args.seconds)),
                "--rate",
                str(args.rate),
                "--format",
                args.format,
                "--output",
                str(output),
                "--nonblocking",
                "--threads",
                *(["--gil"] if args.gil else []),
            ],
        )
        sample = loadgens.window(args.op, [server.pid], args.seconds, warmup=0.5)
        spy.wait()
    print(
        f"{args.op} on {args.store} at c{args.concurrency}: {sample.throughput:.0f} calls/s, "
        f"server CPU {sample.cpu_ms_per_call:.3f} ms/call under py-spy; profile: {output}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
