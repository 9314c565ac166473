"""Peer: Google ADK's ``DatabaseSessionService``, in process (``.venv-bench``).

One service (SQLAlchemy async engine: aiosqlite on a SQLite file; with
``--all-stores`` also asyncpg on the durable PostgreSQL): ``append_event``
of one user event carrying the message text of Mnemo's append, to the
writer's own session; ``get_session``
of a data session of 1,000 events with ``num_recent_events=50`` (Mnemo's
list-messages page) and whole (Mnemo's 1,000-message stream). Concurrency:
asyncio tasks. Readers share one data session (ADK has no bulk load: each
event is one ``append_event``); the whole-session read runs at c1 only.

    python -m bench.peers.adk_sessions --dir DIR [--postgres URL] ...
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import uuid
from pathlib import Path

from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from sqlalchemy import text

from bench.peers import harness
from bench.shapes import MESSAGES, PAGE, message

VERSION = importlib.metadata.version("google-adk")
APP = "bench"
DATA_SESSIONS = 1
# A whole 1,000-event session takes about 0.1 s of CPU to read: a 1 s window at
# higher concurrency would hold only a handful of calls.
WHOLE_SESSION_LEVELS = (1,)


def _event(w: int, i: int) -> Event:
    return Event(
        author="user",
        invocation_id=f"inv-{w}-{i}",
        id=str(uuid.uuid4()),
        content=types.Content(role="user", parts=[types.Part(text=message(w, i)["content"])]),
    )


async def _run(args, store: str, url: str) -> harness.Report:
    service = DatabaseSessionService(db_url=url)
    if store == "sqlite":
        await service.create_session(app_name=APP, user_id="probe")
        async with service.db_engine.connect() as conn:
            journal = (await conn.execute(text("PRAGMA journal_mode"))).scalar()
            synchronous = (await conn.execute(text("PRAGMA synchronous"))).scalar()
        durability = harness.sqlite_pragmas(lambda q: journal if "journal" in q else synchronous)
    else:
        durability = "PostgreSQL 15, fsync=on, synchronous_commit=on, full_page_writes=on (the benchmark cluster)"
    report = harness.Report(
        "Google ADK DatabaseSessionService", store, VERSION, "asyncio tasks", durability
    )
    report.notes += [
        f"readers share {DATA_SESSIONS} data session of {MESSAGES:,} events (ADK has no bulk "
        "load: each event is one append_event)",
        "the whole-session read (1,000 events) runs at c1 only: one call takes about 0.1 s of "
        "CPU, so a short window at c16/c64 holds only a handful of calls",
    ]
    readers = []
    for k in range(DATA_SESSIONS):
        session = await service.create_session(
            app_name=APP, user_id=f"data-{k}", session_id="history"
        )
        for i in range(MESSAGES):
            await service.append_event(session, _event(k, i))
        readers.append(session)
    for c in harness.levels(args):
        writers = [
            await service.create_session(app_name=APP, user_id=f"w-c{c}-{w}") for w in range(c)
        ]

        def append(w: int, sessions=writers):
            return lambda i: service.append_event(sessions[w], _event(w, i))

        report.add(
            "append_event",
            "append",
            c,
            await harness.measure_async_in_loop(append, c, args.seconds, args.warmup, args.repeat),
        )

        def page(w: int):
            reader = readers[w % DATA_SESSIONS]
            config = GetSessionConfig(num_recent_events=PAGE)
            return lambda _i: service.get_session(
                app_name=APP, user_id=reader.user_id, session_id=reader.id, config=config
            )

        report.add(
            f"get_session(num_recent_events={PAGE})",
            "list-messages",
            c,
            await harness.measure_async_in_loop(page, c, args.seconds, args.warmup, args.repeat),
        )

        def whole(w: int):
            reader = readers[w % DATA_SESSIONS]
            return lambda _i: service.get_session(
                app_name=APP, user_id=reader.user_id, session_id=reader.id
            )

        if c in WHOLE_SESSION_LEVELS:
            report.add(
                f"get_session ({MESSAGES:,} events)",
                "stream-history",
                c,
                await harness.measure_async_in_loop(
                    whole, c, args.seconds, args.warmup, args.repeat
                ),
            )
    await service.db_engine.dispose()
    return report


def main() -> None:
    args = harness.arguments(__doc__ or "")
    stores = args.stores.split(",")
    if "sqlite" in stores:
        url = f"sqlite+aiosqlite:///{Path(args.dir) / 'adk-sessions.db'}"
        asyncio.run(_run(args, "sqlite", url)).dump()
    if "postgres" in stores and args.postgres and args.all_stores:
        url = re.sub(r"^postgresql://", "postgresql+asyncpg://", args.postgres)
        asyncio.run(_run(args, "postgres", url)).dump()


if __name__ == "__main__":
    main()
