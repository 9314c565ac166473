"""Units of work on a conversation's canonical history: appends, listing,
streaming, clearing, and failed runs kept apart from it."""

from __future__ import annotations

import functools
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, func, or_, select, update

from mnemo_server.domain import codec, events
from mnemo_server.domain.commands.conversations import (
    AppendMessages,
    ClearMessages,
    PopMessages,
    PopResult,
    RecordFailedRun,
)
from mnemo_server.domain.errors import Aborted, FailedPrecondition
from mnemo_server.domain.models import (
    AppendResult,
    Conversation,
    FailedRun,
    Keyset,
    Page,
    StoredMessage,
)
from mnemo_server.domain.names import message_name
from mnemo_server.store import paging
from mnemo_server.store import rows as convert
from mnemo_server.store.conversations import conversation as conversation_rows
from mnemo_server.store.engine.statements import Statement, insert_row
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.governance import events as event_log
from mnemo_server.store.schema import compaction_checkpoints, conversations, failed_runs, messages
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit

# Lock and touch in one statement: the conversation's row moves on by the
# appended messages (a new etag and update time) and is locked until commit.
_ADVANCE = Statement(
    update(conversations)
    .where(
        conversations.c.user_id == bindparam("user_id"),
        conversations.c.conversation_id == bindparam("conversation_id"),
        or_(conversations.c.expire_at.is_(None), conversations.c.expire_at > bindparam("now")),
    )
    .values(
        message_count=conversations.c.message_count + bindparam("count"),
        updated_at=bindparam("now"),
        etag=bindparam("etag"),
    )
    .returning(*conversations.c)
)
_ADVANCE_CREATED = conversation_rows.touch_with(
    message_count=conversations.c.message_count + bindparam("count")
)
_INSERT_MESSAGE = Statement(insert_row(messages, without=()))

# PostgreSQL: the conversation's advance and the insert of the messages in
# one statement (a data-modifying CTE, one round trip instead of two). Its
# row is the advanced conversation's; none when the conversation does not
# exist (or expired), and then nothing was inserted. A position mismatch,
# found after it, rolls the write back as a whole.
_CONVERSATION_COLUMNS = tuple(c.name for c in conversations.columns)
_ConversationRow = namedtuple("_ConversationRow", _CONVERSATION_COLUMNS)  # type: ignore[misc]
_PG_APPEND_CHUNK = 64
"""Messages at most that the one-statement append takes (larger appends: two)."""
_PG_APPEND = """
    WITH c AS (
        UPDATE conversations SET
            message_count = conversations.message_count + %(count)s::integer,
            updated_at = %(now)s::bigint, etag = %(etag)s::text
        WHERE conversations.user_id = %(user_id)s::text
          AND conversations.conversation_id = %(conversation_id)s::text
          AND (conversations.expire_at IS NULL OR conversations.expire_at > %(now)s::bigint)
        RETURNING {columns}
    ), m AS (
        INSERT INTO messages (conversation_pk, position, user_id, run_id, turn, role,
                              message_json, text, created_at, event_at)
        SELECT c.id, c.message_count - %(count)s::integer + item.ord, %(user_id)s::text,
               %(run_id)s::text, %(turn)s::integer, item.role, item.message_json, item.text,
               %(now)s::bigint, item.event_at
        FROM c, (VALUES {rows}) AS item(ord, role, message_json, text, event_at)
    )
    SELECT {columns} FROM c
"""


@functools.cache
def _pg_append(count: int) -> str:
    """The statement advancing a conversation by ``count`` messages and inserting them."""
    rows = ", ".join(
        f"({n}, %(role_{n})s::text, %(json_{n})s::text, %(text_{n})s::text, %(event_{n})s::bigint)"
        for n in range(count)
    )
    columns = ", ".join(_CONVERSATION_COLUMNS)
    return _PG_APPEND.format(columns=columns, rows=rows)


def _pg_advance_and_insert(tx: Tx, command: AppendMessages, now: int, etag: str) -> Any:
    """``_ADVANCE`` and the messages' insert in one statement (PostgreSQL);
    the advanced conversation's row, ``None`` when there is none."""
    count = len(command.messages)
    params: dict[str, Any] = {
        "user_id": command.user_id,
        "conversation_id": command.conversation_id,
        "count": count,
        "now": now,
        "etag": etag,
        "run_id": command.run_id,
        "turn": command.turn,
    }
    for n, message in enumerate(command.messages):
        params[f"role_{n}"] = message.role
        params[f"json_{n}"] = message.message_json
        params[f"text_{n}"] = message.text
        params[f"event_{n}"] = (
            None if message.event_time is None else convert.to_micros(message.event_time)
        )
    found = tx.raw.execute(_pg_append(count), params).fetchone()
    return None if found is None else _ConversationRow._make(found)


@unit(AppendMessages)
def append(tx: Tx, command: AppendMessages) -> AppendResult:
    """Append at dense positions under the conversation's row lock, creating
    the conversation if needed. Raises ``Aborted(POSITION_MISMATCH)`` (and
    then nothing is written: the write rolls back)."""
    user_id, conversation_id = command.user_id, command.conversation_id
    now = convert.now_micros()
    count = len(command.messages)
    etag = convert.new_etag()
    inserted = tx.dialect == "postgresql" and count <= _PG_APPEND_CHUNK
    if inserted:
        row = _pg_advance_and_insert(tx, command, now, etag)
    else:
        row = _ADVANCE.first(
            tx, user_id=user_id, conversation_id=conversation_id, now=now, count=count, etag=etag
        )
    if row is None:  # created here (the conversation's change below covers it)
        inserted = False
        created, _ = conversation_rows.create_for_write(
            tx, command.caller, user_id, conversation_id, metadata=command.create_metadata, now=now
        )
        row = _ADVANCE_CREATED.one(
            tx, pk=created.id, user_id=user_id, now=now, count=count, etag=etag
        )
    start = row.message_count - count
    expected = command.expected_position
    if expected is not None and expected != start:
        raise Aborted(
            f"expected_position is {expected} but the next position of "
            f"{convert.conversation_name(user_id, conversation_id)} is {start}: "
            "reload the history and retry",
            reason="POSITION_MISMATCH",
            metadata={"expected_position": str(expected), "next_position": str(start)},
        )
    create_time = convert.to_datetime(now)
    stored = tuple(
        StoredMessage(
            position=start + offset,
            run_id=command.run_id,
            turn=command.turn,
            create_time=create_time,
            role=message.role,
            message_json=message.message_json,
            text=message.text,
            event_time=message.event_time,
        )
        for offset, message in enumerate(command.messages)
    )
    _INSERT_MESSAGE.many(
        tx,
        []
        if inserted
        else [
            {
                "conversation_pk": row.id,
                "position": message.position,
                "user_id": user_id,
                "run_id": command.run_id,
                "turn": command.turn,
                "role": message.role,
                "message_json": message.message_json,
                "text": message.text,
                "created_at": now,
                "event_at": None
                if message.event_time is None
                else convert.to_micros(message.event_time),
            }
            for message in stored
        ],
    )
    changed = convert.conversation(row)
    key = command.key
    feed = [change_log.conversation_upserted(changed)]
    feed += [change_log.message_appended(key, message) for message in stored]
    change_log.append(tx, user_id, feed)
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


_m = messages.c
# The columns of ``stored_message_of``, with the conversation's row to filter on.
_MESSAGES_OF_CONVERSATION = select(
    _m.position,
    _m.run_id,
    _m.turn,
    _m.created_at,
    _m.role,
    _m.message_json,
    _m.text,
    _m.event_at,
).join(conversations)  # on the foreign key: (user_id, conversation_pk)
# A page of a conversation's messages, found by the conversation's key.
_PAGE = Statement(
    _MESSAGES_OF_CONVERSATION.where(
        conversations.c.user_id == bindparam("user_id"),
        conversations.c.conversation_id == bindparam("conversation_id"),
        or_(conversations.c.expire_at.is_(None), conversations.c.expire_at > bindparam("now")),
        _m.user_id == bindparam("user_id"),
        _m.position >= bindparam("position"),
    )
    .order_by(_m.position)
    .limit(bindparam("limit"))
)


def list_page(
    conn: Connection, user_id: str, conversation_id: str, start_position: int, limit: int
) -> Page[StoredMessage]:
    """Messages from ``start_position`` on; keyset ``(last_position,)``.
    Raises ``NotFound``. One statement when the page has messages."""
    found = _PAGE.tuples(
        conn,
        user_id=user_id,
        conversation_id=conversation_id,
        now=convert.now_micros(),
        position=start_position,
        limit=limit + 1,
    )
    if not found:
        conversation_rows.find_existing(conn, user_id, conversation_id)  # or NotFound
        return Page(())
    return paging.page(
        [convert.stored_message_of(*message) for message in found],
        limit,
        lambda message: message,
        lambda message: (message.position,),
    )


@dataclass(frozen=True)
class HistoryView:
    """A conversation's canonical history as it stood when a stream of it
    began: the conversation's row, generation and creation time, and its
    message count then (``end``).

    Within one view the messages below ``end`` never change: appends land at
    ``end`` or later, a compaction only adds checkpoints, and what removes
    messages changes the view's identity (a clear starts a new generation; a
    conversation deleted and made again has another row or creation time) or
    leaves a gap below ``end`` (PopMessages), which a later append can only
    fill with messages newer than ``newest``, the creation time of the newest
    message of the view.
    So batches read in separate short transactions add up to what one read
    at the start would have returned, without holding a transaction (and, on
    SQLite, a read lane and the WAL) open while a slow client reads.
    """

    user_id: str
    conversation_id: str
    pk: int
    generation: int
    created_at: int
    end: int
    newest: int


def open_view(
    conn: Connection, user_id: str, conversation_id: str, start_position: int, limit: int
) -> tuple[HistoryView, tuple[StoredMessage, ...]]:
    """The view a stream reads and its first batch (``view_batch``), from
    one snapshot. Raises ``NotFound``."""
    row = conversation_rows.find_existing(conn, user_id, conversation_id)
    newest = _NEWEST.scalar(conn, pk=row.id, user_id=user_id) or 0
    view = HistoryView(
        user_id, conversation_id, row.id, row.generation, row.created_at, row.message_count, newest
    )
    return view, view_batch(conn, view, start_position, limit)


_NEWEST = Statement(
    select(func.max(_m.created_at)).where(
        _m.conversation_pk == bindparam("pk"), _m.user_id == bindparam("user_id")
    )
)


# A batch of a view's messages: none unless the conversation is still the same
# row, generation and creation (one statement: one snapshot on both dialects).
_VIEW_BATCH = Statement(
    _MESSAGES_OF_CONVERSATION.where(
        conversations.c.id == bindparam("pk"),
        conversations.c.user_id == bindparam("user_id"),
        conversations.c.generation == bindparam("generation"),
        conversations.c.created_at == bindparam("created_at"),
        _m.conversation_pk == bindparam("pk"),
        _m.user_id == bindparam("user_id"),
        _m.position >= bindparam("position"),
        _m.position < bindparam("end"),
        _m.created_at <= bindparam("newest"),
    )
    .order_by(_m.position)
    .limit(bindparam("limit"))
)


def view_batch(
    conn: Connection, view: HistoryView, position: int, limit: int
) -> tuple[StoredMessage, ...]:
    """Up to ``limit`` messages of ``view`` from ``position`` on, in order;
    none from ``view.end`` on. Raises ``Aborted(CONCURRENT_MODIFICATION)``
    when they are gone: the history was cleared or popped, or the
    conversation deleted, since the view was opened (the stream must begin
    again)."""
    wanted = min(limit, view.end - position)
    if wanted <= 0:
        return ()
    found = _VIEW_BATCH.tuples(
        conn,
        pk=view.pk,
        user_id=view.user_id,
        generation=view.generation,
        created_at=view.created_at,
        position=position,
        end=view.end,
        newest=view.newest,
        limit=wanted,
    )
    if len(found) != wanted:
        name = convert.conversation_name(view.user_id, view.conversation_id)
        raise Aborted(
            f"the history of {name} was cleared or popped, or the conversation deleted, "
            "while it was streamed: stream it again",
            reason="CONCURRENT_MODIFICATION",
            metadata={"name": name},
        )
    return tuple(convert.stored_message_of(*message) for message in found)


def canonical_from(
    conn: Connection, conversation_pk: int, user_id: str, position: int
) -> tuple[StoredMessage, ...]:
    """Every canonical message from ``position`` on, in order."""
    found = conn.execute(_canonical(conversation_pk, user_id, position)).all()
    return tuple(convert.stored_message(message) for message in found)


_CLEAR = Statement(
    update(conversations)
    .where(conversations.c.id == bindparam("pk"), conversations.c.user_id == bindparam("user_id"))
    .values(
        message_count=0,
        generation=conversations.c.generation + 1,
        checkpoint_seq=0,
        updated_at=bindparam("now"),
        etag=bindparam("etag"),
    )
    .returning(*conversations.c)
)


@unit(ClearMessages)
def clear(tx: Tx, command: ClearMessages) -> Conversation:
    """Delete messages and checkpoints, and strip the messages' states from
    the change feed; start a new generation (every earlier compaction
    revision is stale); positions restart at 0; records ``memory_cleared``.
    Raises ``NotFound``."""
    user_id, conversation_id = command.user_id, command.conversation_id
    row = conversation_rows.lock_existing(tx, user_id, conversation_id)
    for table in (messages, compaction_checkpoints):
        tx.conn.execute(
            delete(table).where(table.c.conversation_pk == row.id, table.c.user_id == user_id)
        )
    changed = _CLEAR.one(
        tx, pk=row.id, user_id=user_id, now=convert.now_micros(), etag=convert.new_etag()
    )
    name = convert.conversation_name(user_id, conversation_id)
    event_log.record(tx, command.caller, user_id, events.cleared("history", name))
    # What was cleared leaves the feed too: the messages' changes lose their text.
    change_log.strip_states(tx.conn, user_id, prefixes=[f"{name}/messages/"])
    cleared = convert.conversation(changed)
    change_log.append(tx, user_id, [change_log.conversation_upserted(cleared)])
    return cleared


_POP = Statement(
    delete(messages)
    .where(
        messages.c.conversation_pk == bindparam("pk"),
        messages.c.user_id == bindparam("user_id"),
        messages.c.position >= bindparam("start"),
    )
    .returning(*messages.c)
)
_COMPACTED = Statement(
    select(compaction_checkpoints.c.covered).where(
        compaction_checkpoints.c.conversation_pk == bindparam("pk"),
        compaction_checkpoints.c.user_id == bindparam("user_id"),
        compaction_checkpoints.c.generation == bindparam("generation"),
        compaction_checkpoints.c.seq == bindparam("seq"),
    )
)
_RETREAT = conversation_rows.touch_with(message_count=bindparam("message_count"))


@unit(PopMessages)
def pop(tx: Tx, command: PopMessages) -> PopResult:
    """Delete the last ``count`` messages under the conversation's row lock.
    Raises ``NotFound``, ``Aborted(POSITION_MISMATCH)``,
    ``FailedPrecondition(HISTORY_COMPACTED)``; popping from an empty history
    changes nothing (no change appended)."""
    user_id, conversation_id = command.user_id, command.conversation_id
    row = conversation_rows.lock_existing(tx, user_id, conversation_id)
    name = convert.conversation_name(user_id, conversation_id)
    next_position = row.message_count
    expected = command.expected_next_position
    if expected is not None and expected != next_position:
        raise Aborted(
            f"expected_next_position is {expected} but the next position of {name} is "
            f"{next_position}: reload the history and retry",
            reason="POSITION_MISMATCH",
            metadata={"expected_position": str(expected), "next_position": str(next_position)},
        )
    start = max(0, next_position - command.count)
    if start == next_position:
        return PopResult(conversation=convert.conversation(row), messages=())
    covered = 0
    if row.checkpoint_seq:
        covered = _COMPACTED.scalar(
            tx, pk=row.id, user_id=user_id, generation=row.generation, seq=row.checkpoint_seq
        )
    if start < covered:
        raise FailedPrecondition(
            f"a compaction of {name} covers its first {covered} messages: pop at most "
            f"{next_position - covered} message(s), or clear the history",
            reason="HISTORY_COMPACTED",
            metadata={"compacted_messages": str(covered), "next_position": str(next_position)},
        )
    popped = sorted(
        (
            convert.stored_message(found)
            for found in _POP.all(tx, pk=row.id, user_id=user_id, start=start)
        ),
        key=lambda message: message.position,
    )
    changed = convert.conversation(
        _RETREAT.one(
            tx,
            pk=row.id,
            user_id=user_id,
            message_count=start,
            now=convert.now_micros(),
            etag=convert.new_etag(),
        )
    )
    key = command.key
    popped_names = [message_name(key, message.position) for message in popped]
    # What was popped leaves the feed too: the messages' changes lose their text.
    change_log.strip_states(tx.conn, user_id, resource_names=popped_names)
    feed = [change_log.conversation_upserted(changed)]
    feed += [change_log.deleted(popped_name) for popped_name in popped_names]
    change_log.append(tx, user_id, feed)
    return PopResult(conversation=changed, messages=tuple(popped))


_INSERT_FAILED_RUN = Statement(insert_row(failed_runs).returning(*failed_runs.c))


@unit(RecordFailedRun)
def record_failed_run(tx: Tx, command: RecordFailedRun) -> FailedRun:
    """Record a failed run apart from the history, creating the conversation
    if needed."""
    now = convert.now_micros()
    user_id, error = command.user_id, command.error
    row, created_conversation = conversation_rows.lock_or_create(
        tx, command.caller, user_id, command.conversation_id, metadata={}, now=now
    )
    created = _INSERT_FAILED_RUN.one(
        tx,
        conversation_pk=row.id,
        user_id=user_id,
        failed_run_id=convert.new_failed_run_id(),
        run_id=command.run_id,
        error_message=error.message,
        error_code=error.code,
        error_details_json=error.details_json,
        messages_json=codec.dumps(command.messages),
        created_at=now,
    )
    run = convert.failed_run(created)
    feed = conversation_rows.created_changes(row, created_conversation)
    feed.append(change_log.failed_run_recorded(command.key, run))
    change_log.append(tx, user_id, feed)
    return run


def list_failed_runs(
    conn: Connection, user_id: str, conversation_id: str, limit: int, after: Keyset | None
) -> Page[FailedRun]:
    """Newest first; keyset ``(id,)``. Raises ``NotFound``."""
    row = conversation_rows.find_existing(conn, user_id, conversation_id)
    query = paging.newest_first(
        select(failed_runs).where(
            failed_runs.c.conversation_pk == row.id, failed_runs.c.user_id == user_id
        ),
        (failed_runs.c.id,),
        paging.typed(after, (int,)),
        limit,
    )
    return paging.read_page(conn, query, limit, convert.failed_run, lambda run: (run.id,))
