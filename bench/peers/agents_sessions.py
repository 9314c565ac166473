"""Peer: the OpenAI Agents SDK's sessions, in process (``.venv-bench``).

``SQLiteSession`` (a SQLite file) and ``SQLAlchemySession`` (one shared async
engine: asyncpg on the durable PostgreSQL; with ``--all-stores`` also
aiosqlite on a SQLite file) with ``add_items`` of one message
(``bench.shapes.message``, the JSON of Mnemo's append) and
``get_items(limit=50)`` of a 1,000-item session (Mnemo's list-messages page). Concurrency: asyncio tasks, each its own session
(``session_id``); readers share the 16 data sessions as Mnemo's do.

    python -m bench.peers.agents_sessions --dir DIR [--postgres URL] ...
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
from pathlib import Path

from agents import SQLiteSession
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bench.peers import harness
from bench.shapes import DATA_USERS, MESSAGES, PAGE, message

VERSION = importlib.metadata.version("openai-agents")


def _sqlite_session(args) -> harness.Report:
    path = Path(args.dir) / "agents-sqlite-session.db"
    probe = SQLiteSession("probe", path)
    conn = probe._get_connection()  # the library's own (per-thread) connection settings
    durability = harness.sqlite_pragmas(lambda q: conn.execute(q).fetchone()[0])
    report = harness.Report(
        "OpenAI Agents SQLiteSession", "sqlite", VERSION, "asyncio tasks", durability
    )
    report.notes.append(
        "the library runs each call in asyncio.to_thread (a thread-local sqlite3 connection "
        "per worker thread, one process-wide lock per file)"
    )
    readers = [SQLiteSession(f"data-{k}", path) for k in range(DATA_USERS)]

    async def load() -> None:
        for k, session in enumerate(readers):
            await session.add_items([message(k, i) for i in range(MESSAGES)])

    asyncio.run(load())
    for c in harness.levels(args):
        writers = [SQLiteSession(f"w-c{c}-{w}", path) for w in range(c)]

        def add(w: int, sessions=writers):
            return lambda i: sessions[w].add_items([message(w, i)])

        report.add(
            "add_items (1 item)",
            "append",
            c,
            harness.measure_async(add, c, args.seconds, args.warmup, args.repeat),
        )

        def get(w: int):
            return lambda _i: readers[w % DATA_USERS].get_items(limit=PAGE)

        report.add(
            f"get_items(limit={PAGE})",
            "list-messages",
            c,
            harness.measure_async(get, c, args.seconds, args.warmup, args.repeat),
        )
    return report


async def _sqlalchemy_session(args, store: str, url: str) -> harness.Report:
    engine = create_async_engine(url, pool_size=10)
    if store == "sqlite":
        session = SQLAlchemySession("probe", engine=engine, create_tables=True)
        await session.get_items()
        async with engine.connect() as conn:

            async def scalar(query: str) -> object:
                return (await conn.execute(text(query))).scalar()

            journal, synchronous = (
                await scalar("PRAGMA journal_mode"),
                await scalar("PRAGMA synchronous"),
            )
        durability = harness.sqlite_pragmas(lambda q: journal if "journal" in q else synchronous)
    else:
        durability = "PostgreSQL 15, fsync=on, synchronous_commit=on, full_page_writes=on (the benchmark cluster)"
    report = harness.Report(
        "OpenAI Agents SQLAlchemySession",
        store,
        VERSION,
        "asyncio tasks, one AsyncEngine (pool 10)",
        durability,
    )
    readers = [
        SQLAlchemySession(f"data-{k}", engine=engine, create_tables=True) for k in range(DATA_USERS)
    ]
    for k, reader in enumerate(readers):
        await reader.add_items([message(k, i) for i in range(MESSAGES)])
    for c in harness.levels(args):
        writers = [
            SQLAlchemySession(f"w-c{c}-{w}", engine=engine, create_tables=True) for w in range(c)
        ]

        def add(w: int, sessions=writers):
            return lambda i: sessions[w].add_items([message(w, i)])

        report.add(
            "add_items (1 item)",
            "append",
            c,
            await harness.measure_async_in_loop(add, c, args.seconds, args.warmup, args.repeat),
        )

        def get(w: int):
            return lambda _i: readers[w % DATA_USERS].get_items(limit=PAGE)

        report.add(
            f"get_items(limit={PAGE})",
            "list-messages",
            c,
            await harness.measure_async_in_loop(get, c, args.seconds, args.warmup, args.repeat),
        )
    await engine.dispose()
    return report


def main() -> None:
    args = harness.arguments(__doc__ or "")
    stores = args.stores.split(",")
    if "sqlite" in stores:
        _sqlite_session(args).dump()
    if "sqlite" in stores and args.all_stores:
        url = f"sqlite+aiosqlite:///{Path(args.dir) / 'agents-sqlalchemy.db'}"
        asyncio.run(_sqlalchemy_session(args, "sqlite", url)).dump()
    if "postgres" in stores and args.postgres:
        url = re.sub(r"^postgresql://", "postgresql+asyncpg://", args.postgres)
        asyncio.run(_sqlalchemy_session(args, "postgres", url)).dump()


if __name__ == "__main__":
    main()
