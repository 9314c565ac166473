"""Units of work on a conversation's canonical history: appends, listing,
clearing, and failed runs kept apart from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Select, delete, insert, select

from mnemo_server.domain import codec, events
from mnemo_server.domain.errors import Aborted
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    ConversationKey,
    FailedRun,
    JsonObject,
    Keyset,
    NewMessage,
    Page,
    RunError,
    StoredMessage,
)
from mnemo_server.store import convert, sql_changes, sql_events
from mnemo_server.store import sql_conversations as rows
from mnemo_server.store.schema import compaction_checkpoints, failed_runs, messages


def append(
    conn: Connection,
    user_id: str,
    conversation_id: str,
    new: Sequence[NewMessage],
    *,
    run_id: str,
    turn: int,
    expected_position: int | None,
    create_metadata: JsonObject,
) -> AppendResult:
    """Append at dense positions under the conversation's row lock, creating
    the conversation if needed. Raises ``Aborted(POSITION_MISMATCH)``."""
    now = convert.now_micros()
    row, _ = rows.lock_or_create(conn, user_id, conversation_id, metadata=create_metadata, now=now)
    start = row.message_count
    if expected_position is not None and expected_position != start:
        raise Aborted(
            f"expected_position is {expected_position} but the next position of "
            f"{convert.conversation_name(user_id, conversation_id)} is {start}: "
            "reload the history and retry",
            reason="POSITION_MISMATCH",
            metadata={"expected_position": str(expected_position), "next_position": str(start)},
        )
    stored = tuple(
        StoredMessage(
            position=start + offset,
            run_id=run_id,
            turn=turn,
            create_time=convert.to_datetime(now),
            role=message.role,
            message_json=message.message_json,
            text=message.text,
        )
        for offset, message in enumerate(new)
    )
    if stored:
        conn.execute(
            insert(messages),
            [
                {
                    "conversation_pk": row.id,
                    "position": message.position,
                    "user_id": user_id,
                    "run_id": run_id,
                    "turn": turn,
                    "role": message.role,
                    "message_json": message.message_json,
                    "text": message.text,
                    "created_at": now,
                }
                for message in stored
            ],
        )
    changed = convert.conversation(rows.touch(conn, row, now, message_count=start + len(stored)))
    key = ConversationKey(user_id, conversation_id)
    feed = [sql_changes.conversation_upserted(changed)]
    feed += [sql_changes.message_appended(key, message) for message in stored]
    sql_changes.append(conn, user_id, feed)
    return AppendResult(conversation=changed, messages=stored)


def _canonical(conversation_pk: int, user_id: str, position: int) -> Select[Any]:
    return (
        select(messages)
        .where(
            messages.c.conversation_pk == conversation_pk,
            messages.c.user_id == user_id,
            messages.c.position >= position,
        )
        .order_by(messages.c.position)
    )


def list_page(
    conn: Connection, user_id: str, conversation_id: str, start_position: int, limit: int
) -> Page[StoredMessage]:
    """Messages from ``start_position`` on; keyset ``(last_position,)``.
    Raises ``NotFound``."""
    row = rows.find_existing(conn, user_id, conversation_id)
    found = conn.execute(_canonical(row.id, user_id, start_position).limit(limit + 1)).all()
    items = tuple(convert.stored_message(message) for message in found[:limit])
    if len(found) <= limit:
        return Page(items)
    return Page(items, next_after=(items[-1].position,))


def canonical_from(
    conn: Connection, conversation_pk: int, user_id: str, position: int
) -> tuple[StoredMessage, ...]:
    """Every canonical message from ``position`` on, in order."""
    found = conn.execute(_canonical(conversation_pk, user_id, position)).all()
    return tuple(convert.stored_message(message) for message in found)


def clear(conn: Connection, user_id: str, conversation_id: str) -> Conversation:
    """Delete messages and checkpoints, and strip the messages' states from
    the change feed; start a new generation (every earlier compaction
    revision is stale); positions restart at 0; records ``memory_cleared``.
    Raises ``NotFound``."""
    row = rows.lock_existing(conn, user_id, conversation_id)
    for table in (messages, compaction_checkpoints):
        conn.execute(
            delete(table).where(table.c.conversation_pk == row.id, table.c.user_id == user_id)
        )
    changed = rows.touch(
        conn,
        row,
        convert.now_micros(),
        message_count=0,
        generation=row.generation + 1,
        checkpoint_seq=0,
    )
    name = convert.conversation_name(user_id, conversation_id)
    sql_events.record(conn, user_id, events.cleared("history", name))
    # What was cleared leaves the feed too: the messages' changes lose their text.
    sql_changes.strip_states(conn, user_id, prefixes=[f"{name}/messages/"])
    cleared = convert.conversation(changed)
    sql_changes.append(conn, user_id, [sql_changes.conversation_upserted(cleared)])
    return cleared


def record_failed_run(
    conn: Connection,
    user_id: str,
    conversation_id: str,
    *,
    run_id: str,
    error: RunError,
    partial: Sequence[NewMessage],
) -> FailedRun:
    """Record a failed run apart from the history, creating the conversation
    if needed."""
    now = convert.now_micros()
    row, created_conversation = rows.lock_or_create(
        conn, user_id, conversation_id, metadata={}, now=now
    )
    created = conn.execute(
        insert(failed_runs)
        .values(
            conversation_pk=row.id,
            user_id=user_id,
            failed_run_id=convert.new_failed_run_id(),
            run_id=run_id,
            error_message=error.message,
            error_code=error.code,
            error_details_json=error.details_json,
            messages_json=codec.dumps(tuple(partial)),
            created_at=now,
        )
        .returning(*failed_runs.c)
    ).one()
    run = convert.failed_run(created)
    feed = rows.created_changes(row, created_conversation)
    feed.append(sql_changes.failed_run_recorded(ConversationKey(user_id, conversation_id), run))
    sql_changes.append(conn, user_id, feed)
    return run


def list_failed_runs(
    conn: Connection, user_id: str, conversation_id: str, limit: int, after: Keyset | None
) -> Page[FailedRun]:
    """Newest first; keyset ``(id,)``. Raises ``NotFound``."""
    row = rows.find_existing(conn, user_id, conversation_id)
    query = select(failed_runs).where(
        failed_runs.c.conversation_pk == row.id, failed_runs.c.user_id == user_id
    )
    if after is not None:
        query = query.where(failed_runs.c.id < int(after[0]))
    found = conn.execute(query.order_by(failed_runs.c.id.desc()).limit(limit + 1)).all()
    items = tuple(convert.failed_run(run) for run in found[:limit])
    if len(found) <= limit:
        return Page(items)
    return Page(items, next_after=(found[limit - 1].id,))
