"""``mnemo embeddings``: where the background embedder stands, read from the
database (no server needed): per model the server has embedded with, the
entries waiting, the backfill's progress, the vectors, and which server
process embeds with it now."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from mnemo_server.config import Settings, add_arguments
from mnemo_server.domain.embedding_backlog import EmbeddingProgress

COMMAND = "embeddings"

__all__ = ["COMMAND", "add_command", "report", "run"]


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="show the background embedder's progress (backlog, backfill, vectors)",
        description="Show, per embedding model this database has seen, the entries waiting "
        "for the server's embedder, the backfill of entries saved without its vector "
        "(after a change of --embedder), the vectors of the model (and how many the server "
        "computed), and which server process embeds with it now. Reads the database.",
    )
    add_arguments(parser, only=("database_url", "data_dir"))
    parser.add_argument(
        "--wait",
        action="store_true",
        help="wait until no entry waits and every backfill is done (checks once a second)",
    )


def report(progress: list[EmbeddingProgress]) -> str:
    """The table ``mnemo embeddings`` prints."""
    if not progress:
        return "no server has embedded with this database yet"
    rows = [("model", "waiting", "backfill", "vectors", "computed", "embedding now")]
    for p in progress:
        backfill = "done" if p.backfill_done else f"{p.backfilled_through}/{p.backfill_until}"
        rows.append(
            (p.model, str(p.backlog), backfill, str(p.vectors), str(p.computed), p.holder or "-")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


async def _progress(url: str, wait: bool) -> list[EmbeddingProgress]:
    from mnemo_server.store.memories.embedding_store import SqlEmbeddingStore
    from mnemo_server.store.transactions.database import open_database

    db = open_database(url)
    try:
        store = SqlEmbeddingStore(db)
        while True:
            progress = [await store.progress(m) for m in await store.models()]
            settled = all(p.backlog == 0 and p.backfill_done for p in progress)
            if settled or not wait:
                return progress
            await asyncio.sleep(1.0)
    finally:
        await db.close()


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Print the table; 1 with one line when there is no database or it cannot
    be reached or read, 2 when its schema is not this version's."""
    from mnemo_server.cli.database import DATABASE_PROBLEMS, refused
    from mnemo_server.lifecycle import EXIT_FAILURE
    from mnemo_server.store import migrate
    from mnemo_server.store.engine.engines import sqlite_file

    url = settings.effective_database_url
    try:
        path = sqlite_file(url)
        if path is not None and not path.exists():  # opening it would create it
            print(
                f"mnemo: there is no database at {path}: `mnemo serve` creates it at its "
                "first start; point --data-dir or --database-url at a server's database",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        migrate.check_schema(url)
        progress = asyncio.run(_progress(url, args.wait))
    except DATABASE_PROBLEMS as error:
        return refused(url, error)
    except KeyboardInterrupt:
        return EXIT_FAILURE
    print(report(progress))
    return 0
