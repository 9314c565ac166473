"""Units of work on working memory: one ``working_memory`` row per
conversation (the default conversation included), written under the
conversation's row lock."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Insert, Row, Update, insert, select, update

from mnemo_server.domain import codec, events
from mnemo_server.domain.changes import NewChange
from mnemo_server.domain.errors import etag_mismatch
from mnemo_server.domain.models import ConversationKey, Exchange, MemoryState, RememberResult
from mnemo_server.domain.names import memory_state_name
from mnemo_server.domain.working_memory import window
from mnemo_server.store import convert, sql_changes, sql_events
from mnemo_server.store import sql_conversations as rows
from mnemo_server.store.schema import conversations, working_memory
from mnemo_server.store.sql_temporary import unexpired


def get(conn: Connection, key: ConversationKey) -> MemoryState:
    """The state, or an empty one if never written."""
    found = conn.execute(
        select(working_memory)
        .join(conversations, conversations.c.id == working_memory.c.conversation_pk)
        .where(
            conversations.c.user_id == key.user_id,
            conversations.c.conversation_id == key.conversation_id,
            working_memory.c.user_id == key.user_id,
            unexpired(convert.now_micros()),
        )
    ).one_or_none()
    return convert.memory_state(found)


def _locked(
    conn: Connection, key: ConversationKey, now: int
) -> tuple[int, Row[Any] | None, list[NewChange]]:
    """The conversation's key, its working memory row, and the change of the
    conversation if this call created it."""
    conversation, created = rows.lock_or_create(
        conn, key.user_id, key.conversation_id, metadata={}, now=now
    )
    found = conn.execute(
        select(working_memory).where(
            working_memory.c.conversation_pk == conversation.id,
            working_memory.c.user_id == key.user_id,
        )
    ).one_or_none()
    return conversation.id, found, rows.created_changes(conversation, created)


def _write(
    conn: Connection,
    key: ConversationKey,
    summary: str | None,
    recent: Callable[[tuple[Exchange, ...]], tuple[Exchange, ...]],
    expected_etag: str | None,
) -> MemoryState:
    """Lock, check the etag, store ``summary`` (None: keep) and
    ``recent(old recent)``, append the changes; the state after."""
    now = convert.now_micros()
    conversation_pk, found, feed = _locked(conn, key, now)
    before = convert.memory_state(found)
    if expected_etag is not None and expected_etag != before.etag:
        raise etag_mismatch(memory_state_name(key))
    values = {
        "summary": before.summary if summary is None else summary,
        "recent_json": codec.dumps(recent(before.recent)),
        "etag": convert.new_etag(),
        "updated_at": now,
    }
    statement: Insert | Update
    if found is None:
        statement = insert(working_memory).values(
            conversation_pk=conversation_pk, user_id=key.user_id, **values
        )
    else:
        statement = (
            update(working_memory)
            .where(
                working_memory.c.conversation_pk == conversation_pk,
                working_memory.c.user_id == key.user_id,
            )
            .values(**values)
        )
    after = convert.memory_state(conn.execute(statement.returning(*working_memory.c)).one())
    feed.append(sql_changes.memory_state_upserted(key, after))
    sql_changes.append(conn, key.user_id, feed)
    return after


def save(
    conn: Connection,
    key: ConversationKey,
    summary: str,
    recent: Sequence[Exchange],
    expected_etag: str | None,
) -> MemoryState:
    """Replace the whole state. Raises ``Aborted(ETAG_MISMATCH)``."""
    return _write(conn, key, summary, lambda _old: tuple(recent), expected_etag)


def remember(
    conn: Connection,
    key: ConversationKey,
    exchange: Exchange,
    keep_recent: int,
    summary: str | None,
    expected_etag: str | None,
) -> RememberResult:
    """Append ``exchange``, keep the newest ``keep_recent``, return the evicted
    ones. Raises ``Aborted(ETAG_MISMATCH)``."""
    evicted: tuple[Exchange, ...] = ()

    def slide(old: tuple[Exchange, ...]) -> tuple[Exchange, ...]:
        nonlocal evicted
        kept, evicted = window(old, exchange, keep_recent)
        return kept

    after = _write(conn, key, summary, slide, expected_etag)
    return RememberResult(state=after, evicted=evicted)


def clear(conn: Connection, key: ConversationKey, expected_etag: str | None) -> MemoryState:
    """Empty the state (new etag) and strip the earlier states from the change
    feed; records ``memory_cleared``. Raises ``Aborted(ETAG_MISMATCH)`` (and
    then changes nothing: the transaction rolls back)."""
    sql_changes.strip_states(conn, key.user_id, [memory_state_name(key)])
    cleared = _write(conn, key, "", lambda _old: (), expected_etag)
    sql_events.record(conn, key.user_id, events.cleared("working_memory", memory_state_name(key)))
    return cleared
