"""What one ``make bench`` run measures: the options, and the workload names
``--only`` selects from.

Workloads (each cell is bounded in time and repeated ``--repeat`` times):

- ``limit``: the empty unary RPC and the empty server stream (the stack's limit);
- ``writes``: append, remember, save state, create memory;
- ``reads``: get state, list a page of messages, get memory;
- ``history``: stream a 1,000-message history;
- ``memories``: list memories; ``recall``, the default call over a data
  user's 1,000 memories (the peers' search does the same); lexical recall,
  fused recall (the default call: the server embeds the query) and build
  context of sentence queries over one user's 10,000 memories
  (``bench.dataset``);
- ``scale``: one server process versus two on the same store;
- ``rss``: server RSS idle and after 100,000 memories;
- ``watch``: watch propagation, same and other server process;
- ``neighbour``: a quiet user's latency beside a flooding user and a user at its
  most watches (``bench.neighbour``);
- ``peers``: the in-process peers (``bench/peers``), same data, same machine;
- ``adapters``: Mnemo's framework adapters beside the libraries they replace
  (``bench.adapter_cells``), written to ``docs/benchmarks-adapters.md``.

Every store cell runs beside the empty unary RPC of the same server, in the
same run: ``limit`` is always measured when any store cell is.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

STORE_WORKLOADS: dict[str, tuple[str, ...]] = {
    "limit": ("empty-stream",),
    "writes": ("append", "remember", "save-state", "create-memory"),
    "reads": ("get-state", "list-messages", "get-memory"),
    "history": ("stream-history",),
    "memories": ("list-memories", "recall", "recall-lexical", "recall-fused", "build-context"),
}
OTHER_WORKLOADS = ("scale", "rss", "watch", "neighbour", "peers", "adapters")
ALL_WORKLOADS = (*STORE_WORKLOADS, *OTHER_WORKLOADS)
# Operations that read the imported data users.
DATA_OPS = frozenset({"list-messages", "stream-history", "get-memory", "list-memories", "recall"})
# Operations that read the recall cells' user (``bench.dataset.load_recall_user``).
RECALL_OPS = frozenset({"recall-lexical", "recall-fused", "build-context"})
# Operations whose windows wait until the server's background embedding has
# drained (``bench.store_cells``): the calls that embed their query.
EMBEDDING_OPS = RECALL_OPS | {"recall"}


@dataclass(frozen=True)
class Plan:
    workloads: tuple[str, ...]
    stores: tuple[str, ...]
    levels: tuple[int, ...]
    seconds: float
    warmup: float
    repeat: int
    ops_per_baseline: int
    loadgen_processes: dict[int, int]
    peer_seconds: float
    peer_warmup: float
    peers_python: str
    peers_all_stores: bool
    rss_memories: int
    rss_stores: tuple[str, ...]
    watch_samples: int
    neighbour_calls: int
    data_users: int

    @property
    def store_ops(self) -> list[str]:
        """The operations of the selected store workloads (``empty`` excluded:
        it is the baseline of every cell)."""
        ops: list[str] = []
        for name, names in STORE_WORKLOADS.items():
            if name in self.workloads:
                ops += names
        if "stream-history" in ops and "empty-stream" not in ops:
            ops.insert(0, "empty-stream")  # the stream's own baseline
        return ops

    def processes(self, concurrency: int) -> int:
        return self.loadgen_processes.get(concurrency, 1)


def _processes(text: str) -> dict[int, int]:
    """``"64:2,16:1"`` -> ``{64: 2, 16: 1}``."""
    out: dict[int, int] = {}
    for part in filter(None, text.split(",")):
        level, count = part.split(":")
        out[int(level)] = int(count)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only",
        default=",".join(ALL_WORKLOADS),
        help=f"workloads, comma-separated (default all: {','.join(ALL_WORKLOADS)})",
    )
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=0.5, help="measured seconds per window")
    parser.add_argument(
        "--warmup", type=float, default=0.2, help="unmeasured seconds before each window"
    )
    parser.add_argument("--repeat", type=int, default=3, help="windows per cell (median, min-max)")
    parser.add_argument(
        "--ops-per-baseline",
        type=int,
        default=4,
        help="operation windows after each baseline window (1: strict [baseline, op] pairs)",
    )
    parser.add_argument(
        "--loadgen-processes",
        default="",
        help="load-generator processes per concurrency, e.g. 64:2 (default one each)",
    )
    parser.add_argument("--peer-seconds", type=float, default=0.4)
    parser.add_argument("--peer-warmup", type=float, default=0.15)
    parser.add_argument(
        "--peers-python",
        default=".venv-bench/bin/python",
        help="the python of the peers' environment (make bench creates it)",
    )
    parser.add_argument(
        "--peers-all-stores",
        action="store_true",
        help="also SQLAlchemySession on SQLite and ADK on PostgreSQL",
    )
    parser.add_argument("--rss-memories", type=int, default=100_000)
    parser.add_argument(
        "--rss-stores", default="sqlite", help="stores of the RSS workload (default sqlite)"
    )
    parser.add_argument("--watch-samples", type=int, default=60)
    parser.add_argument(
        "--neighbour-calls", type=int, default=200, help="the quiet user's calls per phase"
    )
    parser.add_argument("--data-users", type=int, default=16)


def from_arguments(args: argparse.Namespace) -> Plan:
    workloads = tuple(w for w in str(args.only).split(",") if w)
    unknown = set(workloads) - set(ALL_WORKLOADS)
    if unknown:
        raise SystemExit(f"unknown workloads {sorted(unknown)}; known: {', '.join(ALL_WORKLOADS)}")
    return Plan(
        workloads=workloads,
        stores=tuple(s for s in str(args.stores).split(",") if s),
        levels=tuple(int(c) for c in str(args.concurrency).split(",")),
        seconds=args.seconds,
        warmup=args.warmup,
        repeat=args.repeat,
        ops_per_baseline=args.ops_per_baseline,
        loadgen_processes=_processes(args.loadgen_processes),
        peer_seconds=args.peer_seconds,
        peer_warmup=args.peer_warmup,
        peers_python=args.peers_python,
        peers_all_stores=args.peers_all_stores,
        rss_memories=args.rss_memories,
        rss_stores=tuple(s for s in str(args.rss_stores).split(",") if s),
        watch_samples=args.watch_samples,
        neighbour_calls=args.neighbour_calls,
        data_users=args.data_users,
    )
