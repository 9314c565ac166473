"""What observability costs the server per call: ``python -m bench.metrics_cost``.

Three ``mnemo serve`` processes run side by side, each over a fresh SQLite
file: **off** (the defaults), **metrics** (``--metrics-listen``) and
**metrics + json log** (also ``--log-format json``: an access line per
call, written to a file). For each workload, the empty unary RPC (health
``Check``) and ``CreateMemory`` (one identity-wide entry per call, a commit
each), one client at a time (c1, one channel per server) makes ``--calls``
calls (creates: a quarter of that) to each server in turn, window after window, ``--repeat`` rounds:
paired windows, so a change of the machine's load hits all three alike.
The figure is the server's CPU (user + system, every thread, from
``/proc``) per call: the median over the rounds, and the median of the
per-round differences from **off**. Results go to stdout as a markdown
table (and ``--json F``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.servers import Server, cpu_seconds, free_port, migrate, serve
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc

VARIANTS = ("off", "metrics", "metrics + json log")


def _env(variant: str) -> dict[str, str]:
    if variant == "off":
        return {}
    env = {"MNEMO_METRICS_LISTEN": f"127.0.0.1:{free_port()}"}
    if variant == "metrics + json log":
        env["MNEMO_LOG_FORMAT"] = "json"
    return env


@contextlib.contextmanager
def _servers(tmp: Path) -> Iterator[dict[str, tuple[Server, grpc.Channel]]]:
    with contextlib.ExitStack() as stack:
        running: dict[str, tuple[Server, grpc.Channel]] = {}
        for n, variant in enumerate(VARIANTS):
            url = f"sqlite:///{tmp}/bench-{n}.db"
            migrate(url)
            server = stack.enter_context(serve(url, extra_env=_env(variant)))
            channel = stack.enter_context(grpc.insecure_channel(server.target))
            running[variant] = (server, channel)
        yield running


def _check(channel: grpc.Channel) -> Callable[[int], object]:
    check = health_pb2_grpc.HealthStub(channel).Check
    request = health_pb2.HealthCheckRequest()
    return lambda _n: check(request)


def _create(channel: grpc.Channel) -> Callable[[int], object]:
    create = memories_pb2_grpc.MemoryServiceStub(channel).CreateMemory

    def call(n: int) -> object:
        memory = mm.Memory(text=f"The user prefers window seats on long flights ({n}).")
        return create(mm.CreateMemoryRequest(parent="users/bench", memory=memory))

    return call


# Each workload's calls per window, as a share of --calls (a create costs more).
WORKLOADS: dict[str, tuple[Callable[[grpc.Channel], Callable[[int], object]], float]] = {
    "empty RPC (health Check)": (_check, 1.0),
    "CreateMemory": (_create, 0.25),
}


def measure(calls: int, repeat: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per workload and variant: the median server CPU µs per call and the
    median paired difference from ``off``."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-metrics-bench-") as tmp:
        with _servers(Path(tmp)) as servers:
            for workload, (make, share) in WORKLOADS.items():
                calls_of = {variant: make(channel) for variant, (_, channel) in servers.items()}
                window = max(int(calls * share), 1)
                counter = 0
                for call in calls_of.values():  # warm up
                    for _ in range(min(calls, 300)):
                        counter += 1
                        call(counter)
                rounds: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
                for _ in range(repeat):
                    for variant, call in calls_of.items():
                        pid = servers[variant][0].pid
                        before = cpu_seconds(pid)
                        for _ in range(window):
                            counter += 1
                            call(counter)
                        rounds[variant].append((cpu_seconds(pid) - before) / window * 1e6)
                results[workload] = {
                    variant: {
                        "server_cpu_us": statistics.median(rounds[variant]),
                        "delta_us": statistics.median(
                            on - off for on, off in zip(rounds[variant], rounds["off"], strict=True)
                        ),
                    }
                    for variant in VARIANTS
                }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--calls", type=int, default=4000, help="empty RPCs per window (creates: a quarter)"
    )
    parser.add_argument("--repeat", type=int, default=7, help="rounds of paired windows")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results = measure(args.calls, args.repeat)
    print(f"server CPU µs per call, c1, {args.calls} calls × {args.repeat} paired windows")
    print("(in brackets: the median paired difference from off)\n")
    print("| workload | " + " | ".join(VARIANTS) + " |")
    print("| --- |" + " --- |" * len(VARIANTS))
    for workload, variants in results.items():
        cells = [f"{variants['off']['server_cpu_us']:.0f}"]
        for variant in VARIANTS[1:]:
            found = variants[variant]
            share = found["delta_us"] / variants["off"]["server_cpu_us"] * 100
            cells.append(f"{found['server_cpu_us']:.0f} ({found['delta_us']:+.1f}, {share:+.1f} %)")
        print(f"| {workload} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
