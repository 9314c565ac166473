"""The adapter pairs: Mnemo's framework adapters beside the libraries they
replace, on the same workload in one run (``.venv-bench``, which has the
client installed with ``-e clients/python --no-deps``).

For one store (``--stores sqlite`` or ``--stores postgres``) and one live
``mnemo serve`` of that store (``--target``):

- sessions: ``MnemoSession`` vs ``SQLiteSession`` (SQLite) or
  ``SQLAlchemySession`` (asyncpg, one engine, pool 10; PostgreSQL):
  ``add_items`` of one message, ``get_items(limit=50)`` of a 1,000-item
  session; asyncio tasks, each writer its own session, readers sharing 16
  data sessions (``bench.peers.agents_sessions``' workload). The Mnemo side
  shares one ``AsyncMnemoClient`` (one channel) on the measuring event loop.
- store: ``MnemoStore`` vs ``SqliteStore`` / ``PostgresStore`` (psycopg pool
  of 10): ``put``, ``get``, ``search(filter, limit=50)`` over 16 namespaces of
  1,000 (``bench.peers.langgraph_store``' workload, its own code); threads,
  one store object.
- saver: ``MnemoSaver`` vs ``SqliteSaver`` / ``PostgresSaver`` (psycopg pool
  of 10): a graph step (``put_writes`` of the step's write, then ``put`` of
  its checkpoint, each worker its own thread) and ``get_tuple`` of the
  latest checkpoint of one of 16 threads of 100 checkpoints; threads, one
  saver object.

Each pair prints two ``harness.Report`` lines (``side`` "peer" and "mnemo").

    python -m bench.peers.adapters --dir DIR --target HOST:PORT --stores sqlite ...
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents import SQLiteSession
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool
from sqlalchemy.ext.asyncio import create_async_engine

from bench.peers import harness
from bench.peers.langgraph_store import _cells as store_cells
from bench.shapes import DATA_USERS, MESSAGES, PAGE, message
from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.integrations.langgraph import MnemoSaver, MnemoStore
from mnemo.integrations.openai_agents import MnemoSession

AGENTS = importlib.metadata.version("openai-agents")
LANGGRAPH = importlib.metadata.version("langgraph")
CHECKPOINT = importlib.metadata.version("langgraph-checkpoint")
CLIENT = "mnemo-client " + importlib.metadata.version("mnemo-client")
DURABLE_PG = (
    "PostgreSQL 15, fsync=on, synchronous_commit=on, full_page_writes=on (the benchmark cluster)"
)
MNEMO_DURABILITY = "Mnemo's server defaults on this store (the live mnemo serve of this run)"
THREADS = 16  # the saver's data threads
STEPS = 100  # ... each of this many checkpoints


# ------------------------------------------------------------------ sessions


async def _session_cells(args: Any, report: harness.Report, new: Callable[[str], Any]) -> None:
    """``agents_sessions``' workload over sessions made by ``new(session_id)``."""
    readers = [new(f"data-{k}") for k in range(DATA_USERS)]
    for k, reader in enumerate(readers):
        await reader.add_items([message(k, i) for i in range(MESSAGES)])
    for c in harness.levels(args):
        writers = [new(f"w-c{c}-{w}") for w in range(c)]

        def add(w: int, sessions: list[Any] = writers) -> harness.AsyncCall:
            return lambda i: sessions[w].add_items([message(w, i)])

        report.add(
            "add_items (1 item)",
            "append",
            c,
            await harness.measure_async_in_loop(add, c, args.seconds, args.warmup, args.repeat),
        )

        def get(w: int) -> harness.AsyncCall:
            return lambda _i: readers[w % DATA_USERS].get_items(limit=PAGE)

        report.add(
            f"get_items(limit={PAGE})",
            "list-messages",
            c,
            await harness.measure_async_in_loop(get, c, args.seconds, args.warmup, args.repeat),
        )


async def _peer_sessions(args: Any, store: str) -> harness.Report:
    if store == "sqlite":
        path = Path(args.dir) / "adapters-sqlite-session.db"
        conn = SQLiteSession("probe", path)._get_connection()
        report = harness.Report(
            "OpenAI Agents SQLiteSession",
            store,
            AGENTS,
            "asyncio tasks (the library's asyncio.to_thread)",
            harness.sqlite_pragmas(lambda q: conn.execute(q).fetchone()[0]),
            pair="sessions",
            side="peer",
        )
        await _session_cells(args, report, lambda sid: SQLiteSession(sid, path))
        return report
    engine = create_async_engine(
        re.sub(r"^postgresql://", "postgresql+asyncpg://", args.postgres), pool_size=10
    )
    report = harness.Report(
        "OpenAI Agents SQLAlchemySession",
        store,
        AGENTS,
        "asyncio tasks, one AsyncEngine (asyncpg, pool 10)",
        DURABLE_PG,
        pair="sessions",
        side="peer",
    )
    await _session_cells(
        args, report, lambda sid: SQLAlchemySession(sid, engine=engine, create_tables=True)
    )
    await engine.dispose()
    return report


async def _mnemo_sessions(args: Any, store: str) -> harness.Report:
    report = harness.Report(
        "MnemoSession",
        store,
        f"{CLIENT}, openai-agents {AGENTS}",
        "asyncio tasks, one AsyncMnemoClient (one channel)",
        MNEMO_DURABILITY,
        pair="sessions",
        side="mnemo",
    )
    report.notes.append(
        "each session its own Mnemo user; get_items(limit) reads the count, then the tail"
    )
    async with AsyncMnemoClient(args.target) as client:
        await _session_cells(
            args,
            report,
            lambda sid: MnemoSession(sid, user=f"s-{sid}", client=client, conversation_id="c"),
        )
    return report


# --------------------------------------------------------------------- store


def _peer_store(args: Any, store: str) -> harness.Report:
    if store == "sqlite":
        with SqliteStore.from_conn_string(str(Path(args.dir) / "adapters-store.db")) as lg:
            lg.setup()
            report = harness.Report(
                "LangGraph SqliteStore",
                store,
                LANGGRAPH,
                "threads (one connection behind the store's lock)",
                harness.sqlite_pragmas(lambda q: lg.conn.execute(q).fetchone()[0]),
                pair="store",
                side="peer",
            )
            store_cells(args, lg, report)
            return report
    with PostgresStore.from_conn_string(
        args.postgres, pool_config={"min_size": 1, "max_size": 10}
    ) as pg:
        pg.setup()
        report = harness.Report(
            "LangGraph PostgresStore",
            store,
            LANGGRAPH,
            "threads, psycopg pool of 10",
            DURABLE_PG + "; autocommit connections",
            pair="store",
            side="peer",
        )
        store_cells(args, pg, report)
        return report


def _mnemo_store(args: Any, store: str) -> harness.Report:
    report = harness.Report(
        "MnemoStore",
        store,
        f"{CLIENT}, langgraph {LANGGRAPH}",
        "threads, one MnemoStore (one MnemoClient, one channel), one Mnemo user",
        MNEMO_DURABILITY,
        pair="store",
        side="mnemo",
    )
    mnemo = MnemoStore(args.target, user="store-bench")
    try:
        store_cells(args, mnemo, report)
    finally:
        mnemo.close()
    return report


# --------------------------------------------------------------------- saver


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


class _Thread:
    """One graph thread's steps: ``put_writes`` of the step's write, then ``put``
    of the checkpoint that the step ends with (as the Pregel loop does)."""

    def __init__(self, saver: BaseCheckpointSaver[Any], thread: str) -> None:
        self.saver = saver
        self.config: Any = _config(thread)
        self.step = 0

    def __call__(self, _i: int = 0) -> None:
        self.step += 1
        value = {"step": self.step, "note": f"step {self.step} of {self.config['configurable']}"}
        if self.step > 1:
            self.saver.put_writes(self.config, [("state", value)], f"task-{self.step}")
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=self.step))
        checkpoint["channel_values"] = {"state": value}
        checkpoint["channel_versions"] = {"state": self.step}
        metadata: Any = {"source": "loop", "step": self.step, "parents": {}}
        self.config = self.saver.put(self.config, checkpoint, metadata, {"state": self.step})


def _saver_cells(args: Any, saver: BaseCheckpointSaver[Any], report: harness.Report) -> None:
    for k in range(THREADS):
        steps = _Thread(saver, f"data-{k}")
        for _ in range(STEPS):
            steps()
    for c in harness.levels(args):

        def step(w: int, c: int = c) -> harness.SyncCall:
            return _Thread(saver, f"w-c{c}-{w}")

        report.add(
            "step (put_writes + put)",
            "step",
            c,
            harness.measure_threads(step, c, args.seconds, args.warmup, args.repeat),
        )

        def latest(w: int) -> harness.SyncCall:
            config = _config(f"data-{w % THREADS}")
            return lambda _i: saver.get_tuple(config)

        report.add(
            f"get_tuple (latest of {STEPS})",
            "get_tuple",
            c,
            harness.measure_threads(latest, c, args.seconds, args.warmup, args.repeat),
        )


@contextmanager
def _pg_pool(url: str) -> Iterator[ConnectionPool[Any]]:
    with ConnectionPool(
        url,
        min_size=1,
        max_size=10,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    ) as pool:
        yield pool


def _peer_saver(args: Any, store: str) -> harness.Report:
    if store == "sqlite":
        with SqliteSaver.from_conn_string(str(Path(args.dir) / "adapters-saver.db")) as saver:
            saver.setup()
            report = harness.Report(
                "LangGraph SqliteSaver",
                store,
                "langgraph-checkpoint-sqlite "
                + importlib.metadata.version("langgraph-checkpoint-sqlite"),
                "threads (one connection behind the saver's lock)",
                harness.sqlite_pragmas(lambda q: saver.conn.execute(q).fetchone()[0]),
                pair="saver",
                side="peer",
            )
            _saver_cells(args, saver, report)
            return report
    with _pg_pool(args.postgres) as pool:
        pg = PostgresSaver(pool)
        pg.setup()
        report = harness.Report(
            "LangGraph PostgresSaver",
            store,
            "langgraph-checkpoint-postgres "
            + importlib.metadata.version("langgraph-checkpoint-postgres"),
            "threads, psycopg pool of 10",
            DURABLE_PG + "; autocommit connections",
            pair="saver",
            side="peer",
        )
        _saver_cells(args, pg, report)
        return report


def _mnemo_saver(args: Any, store: str) -> harness.Report:
    report = harness.Report(
        "MnemoSaver",
        store,
        f"{CLIENT}, langgraph-checkpoint {CHECKPOINT}",
        "threads, one MnemoSaver (one MnemoClient, one channel), one Mnemo user",
        MNEMO_DURABILITY,
        pair="saver",
        side="mnemo",
    )
    with MnemoClient(args.target) as client:
        _saver_cells(args, MnemoSaver(client, user="saver-bench"), report)
    return report


def main() -> None:
    args = harness.arguments(__doc__ or "")
    if not args.target:
        raise SystemExit("--target (a live mnemo serve) is required")
    for store in args.stores.split(","):
        if store == "postgres" and not args.postgres:
            continue
        asyncio.run(_peer_sessions(args, store)).dump()
        asyncio.run(_mnemo_sessions(args, store)).dump()
        _peer_store(args, store).dump()
        _mnemo_store(args, store).dump()
        _peer_saver(args, store).dump()
        _mnemo_saver(args, store).dump()


if __name__ == "__main__":
    main()
