"""Peer: LangGraph's long-term memory stores, in process (``.venv-bench``).

``SqliteStore`` (``from_conn_string`` of a SQLite file: one connection behind
the store's lock) and ``PostgresStore`` (a psycopg pool of 10, as Mnemo's
server pool, on the durable cluster), no vector index:

- ``put`` of one memory ``{"text", "kind"}`` in the writer's namespace
  (Mnemo's create-memory);
- ``get`` of a random one of a data user's 1,000 (get-memory);
- ``search`` with a filter on ``kind``, ``limit=50``, over 1,000 (list-memories).

Concurrency: OS threads (the stores are blocking APIs), each writer its own
namespace; readers share the 16 data users as Mnemo's do.

    python -m bench.peers.langgraph_store --dir DIR [--postgres URL] ...
"""

from __future__ import annotations

import importlib.metadata
import random
from pathlib import Path

from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from bench.peers import harness
from bench.shapes import DATA_USERS, KINDS, MEMORIES, PAGE, corpus, memory_id

VERSION = importlib.metadata.version("langgraph")


def _load(store) -> None:
    for k in range(DATA_USERS):
        texts = corpus(k)
        store.batch(
            [
                PutOp(
                    ("memories", f"data-{k}"),
                    memory_id(i),
                    {"text": texts.sentence(), "kind": KINDS[i % len(KINDS)]},
                    index=False,
                )
                for i in range(MEMORIES)
            ]
        )


def _cells(args, store, report: harness.Report) -> None:
    _load(store)
    for c in harness.levels(args):

        def put(w: int, c: int = c):
            texts = corpus(10_000 + w)
            namespace = ("memories", f"w-c{c}-{w}")
            return lambda i: store.put(
                namespace, f"k{i}", {"text": texts.sentence(), "kind": "fact"}, index=False
            )

        report.add(
            "put",
            "create-memory",
            c,
            harness.measure_threads(put, c, args.seconds, args.warmup, args.repeat),
        )

        def get(w: int):
            rng = random.Random(w)
            namespace = ("memories", f"data-{w % DATA_USERS}")
            return lambda _i: store.get(namespace, memory_id(rng.randrange(MEMORIES)))

        report.add(
            "get",
            "get-memory",
            c,
            harness.measure_threads(get, c, args.seconds, args.warmup, args.repeat),
        )

        def search(w: int):
            namespace = ("memories", f"data-{w % DATA_USERS}")
            return lambda _i: store.search(namespace, filter={"kind": "preference"}, limit=PAGE)

        report.add(
            f"search(filter, limit={PAGE})",
            "list-memories",
            c,
            harness.measure_threads(search, c, args.seconds, args.warmup, args.repeat),
        )


def main() -> None:
    args = harness.arguments(__doc__ or "")
    stores = args.stores.split(",")
    if "sqlite" in stores:
        path = Path(args.dir) / "langgraph-store.db"
        with SqliteStore.from_conn_string(str(path)) as store:
            store.setup()
            durability = harness.sqlite_pragmas(lambda q: store.conn.execute(q).fetchone()[0])
            report = harness.Report(
                "LangGraph SqliteStore",
                "sqlite",
                VERSION,
                "threads (one connection behind the store's lock)",
                durability,
            )
            _cells(args, store, report)
            report.dump()
    if "postgres" in stores and args.postgres:
        with PostgresStore.from_conn_string(
            args.postgres, pool_config={"min_size": 1, "max_size": 10}
        ) as store:
            store.setup()
            report = harness.Report(
                "LangGraph PostgresStore",
                "postgres",
                VERSION,
                "threads, psycopg pool of 10",
                "PostgreSQL 15, fsync=on, synchronous_commit=on, full_page_writes=on (the benchmark cluster); autocommit connections",
            )
            _cells(args, store, report)
            report.dump()


if __name__ == "__main__":
    main()
