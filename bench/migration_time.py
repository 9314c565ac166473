"""How long migration 0014 (every per-user key includes ``user_id``) takes on a
large store: ``--memories`` entries (default 1 million) over ``--users``
users, each with a vector of 384 float32s, one in five with an earlier
version, and ``--memories`` messages in conversations of ten; the database
at revision 0013, filled with SQL (no server), then upgraded to 0014 and
downgraded back, each timed.

PostgreSQL: a throwaway cluster durable like production (``bench.servers``).
SQLite: a file in a temporary directory.

    python bench/migration_time.py [--store postgresql|sqlite|both]
                                   [--memories 1000000] [--users 10000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from sqlalchemy import Connection, create_engine, text

from bench.servers import Databases
from mnemo_server.store import migrate

BEFORE, AFTER = "0013", "0014"
VECTOR_BYTES = 384 * 4
CONVERSATION_MESSAGES = 10

# One statement per table; :n entries, :u users, :c conversations. ``{seq}``
# is the dialect's 1..n series of ``i``.
_FILL = (
    "INSERT INTO users (user_id, tenant_id, created_at) SELECT 'u' || i, '', 0 FROM {seq_u}",
    "INSERT INTO memories (user_id, memory_id, key, scope, conversation_id, source, text, "
    "metadata_json, pinned, created_at, updated_at, event_at, fingerprint, etag, version, "
    "search_document) "
    "SELECT 'u' || (i % :u + 1), 'm' || i, '', 'identity', '', 'explicit', 'fact ' || i, '{{}}', "
    "{false}, i, i, i, 'f' || i, 'e', CASE WHEN i % 5 = 0 THEN 2 ELSE 1 END, 'fact ' || i "
    "FROM {seq_n}",
    "INSERT INTO memory_versions (memory_pk, version, user_id, text, metadata_json, pinned, "
    "etag, updated_at, replaced_at) "
    "SELECT id, 1, user_id, 'earlier ' || text, '{{}}', {false}, 'e', 0, 0 "
    "FROM memories WHERE version = 2",
    "INSERT INTO memory_embeddings (memory_pk, user_id, model, dimensions, vector, computed) "
    "SELECT id, user_id, 'bench', 384, {vector}, {true} FROM memories",
    "INSERT INTO conversations (user_id, conversation_id, metadata_json, temporary, created_at, "
    "updated_at, message_count, generation, checkpoint_seq, etag) "
    "SELECT 'u' || (i % :u + 1), 'c' || i, '{{}}', {false}, 0, 0, 10, 1, 0, 'e' FROM {seq_c}",
    "INSERT INTO messages (conversation_pk, position, user_id, run_id, turn, role, "
    "message_json, text, created_at) "
    "SELECT c.id, p.i, c.user_id, 'r', p.i, 'user', '{{}}', 'said ' || p.i, 0 "
    "FROM conversations c CROSS JOIN {seq_p}",
)


def _postgresql_sql(statement: str) -> str:
    series = "generate_series(1, {}) AS s(i)"
    return statement.format(
        seq_u=series.format(":u"),
        seq_n=series.format(":n"),
        seq_c=series.format(":c"),
        seq_p=f"generate_series(0, {CONVERSATION_MESSAGES - 1}) AS p(i)",
        false="false",
        true="true",
        vector=f"decode(repeat('00', {VECTOR_BYTES}), 'hex')",
    )


def _sqlite_sql(statement: str) -> str:
    def series(bound: str, first: int = 1) -> str:
        return (
            f"(WITH RECURSIVE s(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM s "
            f"WHERE i < {bound}) SELECT i FROM s)"
        )

    return statement.format(
        seq_u=series(":u"),
        seq_n=series(":n"),
        seq_c=series(":c"),
        seq_p=f"{series(str(CONVERSATION_MESSAGES - 1), 0)} AS p",
        false="0",
        true="1",
        vector=f"zeroblob({VECTOR_BYTES})",
    )


def _fill(conn: Connection, render: Callable[[str], str], memories: int, users: int) -> None:
    params = {"n": memories, "u": users, "c": max(1, memories // CONVERSATION_MESSAGES)}
    for statement in _FILL:
        conn.execute(text(render(statement)), params)


@contextmanager
def _empty_url(store: str) -> Iterator[str]:
    with ExitStack() as stack:
        yield Databases(stack).raw("postgres" if store == "postgresql" else "sqlite")


def _timed(what: str, step: Callable[[], None]) -> float:
    started = time.perf_counter()
    step()
    elapsed = time.perf_counter() - started
    print(f"  {what}: {elapsed:.1f} s", flush=True)
    return elapsed


def measure(store: str, memories: int, users: int) -> dict[str, float]:
    """Seconds to fill, upgrade and downgrade one store."""
    render = _postgresql_sql if store == "postgresql" else _sqlite_sql
    print(f"{store}: {memories} memories, {users} users", flush=True)
    with _empty_url(store) as url:
        migrate.upgrade(url, BEFORE)
        engine = create_engine(url)
        try:

            def fill() -> None:
                with engine.begin() as conn:
                    _fill(conn, render, memories, users)

            result = {"fill": _timed(f"fill at {BEFORE}", fill)}
        finally:
            engine.dispose()
        result["upgrade"] = _timed(
            f"upgrade {BEFORE} -> {AFTER}", lambda: migrate.upgrade(url, AFTER)
        )
        result["downgrade"] = _timed(
            f"downgrade {AFTER} -> {BEFORE}", lambda: migrate.downgrade(url, BEFORE)
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("postgresql", "sqlite", "both"), default="both")
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    args = parser.parse_args(argv)
    stores = ("postgresql", "sqlite") if args.store == "both" else (args.store,)
    for store in stores:
        measure(store, args.memories, args.users)
    return 0


if __name__ == "__main__":
    sys.exit(main())
