"""What observability costs the server per call: ``python -m bench.metrics_cost``.

Three ``mnemo serve`` processes run side by side, each over a fresh SQLite
file: **off** (the defaults), **metrics** (``--metrics-listen``) and
**metrics + json log** (also ``--log-format json``: an access line per
call, written to a file). For each workload, the empty unary RPC (health
``Check``) and ``CreateMemory`` (one identity-wide entry per call, a commit
each), one client at a time (c1, one channel per server) makes ``--calls``
calls (creates: a quarter of that) to each server in turn, window after
window, ``--repeat`` rounds, each round starting with the next variant:
paired windows, so that a change of the machine's load hits all three
alike. The figure is the server's CPU (user + system, every thread, from
``/proc``) per call: the median over the rounds, and the median of the
per-round differences from **off**. On a busy machine those differences
are noisy, so the recording code's own CPU per call is also measured in
process, over many calls (``micro``): what the interceptor records per
call, what the store's observer does per transaction, and an access line
written to a file. Results go to stdout as markdown tables (and
``--json F``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.servers import Server, cpu_seconds, free_port, migrate, serve
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc
from mnemo_server.domain.observe import Transaction
from mnemo_server.observability.interceptor import ACCESS_LOGGER, _Call
from mnemo_server.observability.logs import JsonFormatter
from mnemo_server.observability.metrics import Metrics
from mnemo_server.rpc.call_log import CallNote, noting

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
                for round_ in range(repeat):
                    # Each round starts with the next variant: none is always first.
                    order = VARIANTS[round_ % 3 :] + VARIANTS[: round_ % 3]
                    for variant in order:
                        call = calls_of[variant]
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


def _per_call_us(work: Callable[[], object], calls: int) -> float:
    for _ in range(min(calls, 2000)):
        work()
    started = time.process_time_ns()
    for _ in range(calls):
        work()
    return (time.process_time_ns() - started) / calls / 1000


def micro(calls: int = 100_000) -> dict[str, float]:
    """CPU µs per call of the recording code alone, in this process."""
    metrics = Metrics()
    method = "/mnemo.v1.MemoryService/CreateMemory"
    request = mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text="x" * 200))
    recorded = _Call(metrics, method, log=False)
    logged = _Call(None, method, log=True)
    note = CallNote()
    done = Transaction("write", 0, 1_000_000, [None])
    with tempfile.NamedTemporaryFile(prefix="mnemo-access-", suffix=".log") as file:
        handler = logging.FileHandler(file.name)
        handler.setFormatter(JsonFormatter())
        access = logging.getLogger(ACCESS_LOGGER)
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False
        try:
            line = _per_call_us(lambda: logged.end(logged.begin(), "OK", note, request), calls // 4)
        finally:
            access.removeHandler(handler)
            handler.close()

    def with_note() -> None:
        with noting():
            pass

    return {
        "RPC metrics (in flight, count, histogram)": _per_call_us(
            lambda: recorded.end(recorded.begin(), "OK", None, request), calls
        ),
        "store transaction (histograms of duration and batch)": _per_call_us(
            lambda: metrics.transaction(done), calls
        ),
        "access line (JSON, to a file) and its call note": line + _per_call_us(with_note, calls),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--calls", type=int, default=4000, help="empty RPCs per window (creates: a quarter)"
    )
    parser.add_argument("--repeat", type=int, default=7, help="rounds of paired windows")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--micro-only", action="store_true", help="only the in-process figures")
    args = parser.parse_args(argv)
    results = {} if args.micro_only else measure(args.calls, args.repeat)
    if results:
        print(f"server CPU µs per call, c1, {args.calls} calls × {args.repeat} paired windows")
        print("(in brackets: the median paired difference from off)\n")
        print("| workload | " + " | ".join(VARIANTS) + " |")
        print("| --- |" + " --- |" * len(VARIANTS))
        for workload, variants in results.items():
            cells = [f"{variants['off']['server_cpu_us']:.0f}"]
            for variant in VARIANTS[1:]:
                found = variants[variant]
                share = found["delta_us"] / variants["off"]["server_cpu_us"] * 100
                cells.append(
                    f"{found['server_cpu_us']:.0f} ({found['delta_us']:+.1f}, {share:+.1f} %)"
                )
            print(f"| {workload} | " + " | ".join(cells) + " |")
    recording = micro()
    print("\nthe recording code alone, CPU µs per call, in process\n")
    print("| what | µs |\n| --- | --- |")
    for what, us in recording.items():
        print(f"| {what} | {us:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"servers": results, "micro": recording}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
