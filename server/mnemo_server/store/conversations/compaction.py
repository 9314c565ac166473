"""Units of work for compaction (``domain.compaction``): checkpoints keyed by
(generation, seq) over a history whose canonical messages are never deleted."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from mnemo_server.domain import codec
from mnemo_server.domain.commands.conversations import ReplaceHistoryPrefix
from mnemo_server.domain.compaction import (
    Checkpoint,
    encode_revision,
    foreign_revision,
    next_checkpoint,
    revision_parts,
)
from mnemo_server.domain.errors import Aborted
from mnemo_server.domain.models import HistorySnapshot
from mnemo_server.store import rows as convert
from mnemo_server.store.conversations import conversation as conversation_rows
from mnemo_server.store.conversations.conversation import ConversationRow
from mnemo_server.store.conversations.messages import canonical_from
from mnemo_server.store.engine.statements import Statement, insert_row
from mnemo_server.store.feed import changes
from mnemo_server.store.schema import compaction_checkpoints
from mnemo_server.store.transactions.tx import Tx
from mnemo_server.store.transactions.units import unit


def _latest(conn: Connection, row: ConversationRow) -> tuple[Checkpoint, str, int]:
    """The current checkpoint of the conversation, the run that made it and
    its creation time (an empty checkpoint if there is none)."""
    if row.checkpoint_seq == 0:
        return Checkpoint(), "", 0
    found = conn.execute(
        select(compaction_checkpoints).where(
            compaction_checkpoints.c.conversation_pk == row.id,
            compaction_checkpoints.c.user_id == row.user_id,
            compaction_checkpoints.c.generation == row.generation,
            compaction_checkpoints.c.seq == row.checkpoint_seq,
        )
    ).one()
    checkpoint = Checkpoint(
        replacement=convert.new_messages(found.replacement_json), covered=found.covered
    )
    return checkpoint, found.run_id, found.created_at


def _projection(conn: Connection, row: ConversationRow) -> HistorySnapshot:
    checkpoint, run_id, created_at = _latest(conn, row)
    replacement = convert.unpositioned(
        checkpoint.replacement, run_id=run_id, created_at=created_at, compacted=True
    )
    canonical = canonical_from(conn, row.id, row.user_id, checkpoint.covered)
    return HistorySnapshot(
        revision=encode_revision(row.generation, row.checkpoint_seq),
        messages=replacement + canonical,
    )


def snapshot(conn: Connection, user_id: str, conversation_id: str) -> HistorySnapshot:
    """The projection and its revision. Raises ``NotFound``."""
    return _projection(conn, conversation_rows.find_existing(conn, user_id, conversation_id))


_CHECKPOINT = Statement(insert_row(compaction_checkpoints, without=()))
_ADVANCE = conversation_rows.touch_with(checkpoint_seq=bindparam("checkpoint_seq"))


@unit(ReplaceHistoryPrefix)
def replace_prefix(tx: Tx, command: ReplaceHistoryPrefix) -> HistorySnapshot:
    """Record the next checkpoint if ``revision`` is current. Raises
    ``NotFound``, ``Aborted(REVISION_STALE)``, ``InvalidArgument`` (a
    revision we did not issue: ``Entry(Part.REVISION)``; ``message_count`` out
    of range: ``Entry(Part.MESSAGE_COUNT)``)."""
    user_id, conversation_id = command.user_id, command.conversation_id
    parts = revision_parts(command.revision)
    if parts is None:
        raise foreign_revision()
    row = conversation_rows.lock_existing(tx, user_id, conversation_id)
    if parts != (row.generation, row.checkpoint_seq):
        raise Aborted(
            "the history was compacted or cleared since this revision was taken: "
            "take a new snapshot and compact again",
            reason="REVISION_STALE",
            metadata={"name": convert.conversation_name(user_id, conversation_id)},
        )
    previous, _, _ = _latest(tx.conn, row)
    checkpoint = next_checkpoint(
        previous, row.message_count, command.message_count, command.replacement
    )
    now = convert.now_micros()
    _CHECKPOINT.execute(
        tx,
        conversation_pk=row.id,
        generation=row.generation,
        seq=row.checkpoint_seq + 1,
        user_id=user_id,
        covered=checkpoint.covered,
        replacement_json=codec.dumps(checkpoint.replacement),
        run_id=command.run_id,
        created_at=now,
    )
    changed = _ADVANCE.one(
        tx,
        pk=row.id,
        user_id=user_id,
        now=now,
        etag=convert.new_etag(),
        checkpoint_seq=row.checkpoint_seq + 1,
    )
    conversation = convert.conversation(changed)
    changes.append(tx, user_id, [changes.conversation_upserted(conversation)])
    return _projection(tx.conn, changed)
