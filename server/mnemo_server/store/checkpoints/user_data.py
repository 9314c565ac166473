"""Graph checkpoints in a user's export and import (``store.user_data``):
the export section (every checkpoint with its pending writes, by thread,
namespace and id, bytewise) and the rows and changes of an import.

Pending writes of a checkpoint that was never stored (LangGraph writes to
the checkpoint it just put, so there are none in practice) are not exported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.checkpoints import (
    StoredCheckpoint,
    ThreadKey,
    checkpoint_name,
    ref_of,
)
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import ExportItem
from mnemo_server.store import paging
from mnemo_server.store.checkpoints.reads import checkpoint_of, writes_of
from mnemo_server.store.engine import dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.rows import to_micros
from mnemo_server.store.schema import graph_checkpoint_writes, graph_checkpoints

__all__ = ["changes", "export_page", "load"]

_cp = graph_checkpoints.c


def export_page(
    conn: Connection, user_id: str, limit: int, after: Keyset | None
) -> Page[ExportItem]:
    """Up to ``limit`` checkpoints of the user after keyset ``after``
    (thread id, namespace, checkpoint id; bytewise), with their writes."""
    keys = [dialect.by_id(conn, c) for c in (_cp.thread_id, _cp.checkpoint_ns, _cp.checkpoint_id)]
    statement = paging.oldest_first(
        select(graph_checkpoints).where(_cp.user_id == user_id), keys, after, limit
    )
    rows = conn.execute(statement).all()
    more, rows = len(rows) > limit, rows[:limit]
    wanted: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        wanted[row.thread_id].append((row.checkpoint_ns, row.checkpoint_id))
    writes = {
        (thread_id, *key): found
        for thread_id, keys_of_thread in wanted.items()
        for key, found in writes_of(conn, ThreadKey(user_id, thread_id), keys_of_thread).items()
    }
    items: tuple[ExportItem, ...] = tuple(
        checkpoint_of(row, writes[(row.thread_id, row.checkpoint_ns, row.checkpoint_id)])
        for row in rows
    )
    last = rows[-1] if rows else None
    next_after = (last.thread_id, last.checkpoint_ns, last.checkpoint_id) if more and last else None
    return Page(items, next_after)


def load(conn: Connection, user_id: str, checkpoints: Sequence[StoredCheckpoint], now: int) -> None:
    """Insert the imported checkpoints and their writes (into a user
    without data: ``store.user_data.load`` checked)."""
    if not checkpoints:
        return
    rows: list[dict[str, Any]] = []
    write_rows: list[dict[str, Any]] = []
    for c in checkpoints:
        at = to_micros(c.create_time) if c.create_time is not None else now
        keys = {
            "user_id": user_id,
            "thread_id": c.thread_id,
            "checkpoint_ns": c.checkpoint_ns,
            "checkpoint_id": c.checkpoint_id,
        }
        rows.append(
            {
                **keys,
                "parent_checkpoint_id": c.parent_checkpoint_id,
                "checkpoint_type": c.type,
                "checkpoint": c.checkpoint,
                "metadata_json": c.metadata_json,
                "run_id": c.run_id,
                "created_at": at,
            }
        )
        write_rows += [
            {
                **keys,
                "task_id": w.task_id,
                "idx": w.idx,
                "channel": w.channel,
                "value_type": w.type,
                "value": w.value,
                "task_path": w.task_path,
                "created_at": at,
            }
            for w in c.pending_writes
        ]
    conn.execute(graph_checkpoints.insert(), rows)
    if write_rows:
        conn.execute(graph_checkpoint_writes.insert(), write_rows)


def changes(user_id: str, checkpoints: Sequence[StoredCheckpoint]) -> list[NewChange]:
    """One UPSERT per imported checkpoint (as a put records it)."""
    return [
        change_log.upsert(
            checkpoint_name(ThreadKey(user_id, c.thread_id), c.checkpoint_id), ref_of(c)
        )
        for c in checkpoints
    ]
