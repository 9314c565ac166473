"""Validity and sameness: ``messages.event_at`` (when a message was said,
when its client dated it) and ``memory_candidates.event_at`` (the event time
of the entry it proposes), ``memories.valid_until`` (the event time of the
entry that superseded a keyed entry: it was true from its own event time
until then) and ``memories.fingerprint`` (``domain.sameness.fingerprint`` of
its text), with the two indexes that serve them: a keyed chain by event time
(an out-of-order save finds its place in one lookup) and the live entries by
fingerprint (an exact duplicate is found without a scan).

Existing entries: an archived entry was superseded when it was archived, by
an entry whose event time was its create time, so ``valid_until`` is its
``archived_at``; every fingerprint is computed from the text. ``memories`` is
altered in place, never rebuilt (see revision 0011).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mnemo_server.domain.sameness import fingerprint

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None

_BATCH = 1_000


def upgrade() -> None:
    # Messages dated by their client (NULL: the create time).
    op.add_column("messages", sa.Column("event_at", sa.BigInteger(), nullable=True))
    # A candidate's event time (the message it was found in), kept until approval.
    op.add_column("memory_candidates", sa.Column("event_at", sa.BigInteger(), nullable=True))
    op.add_column("memories", sa.Column("valid_until", sa.BigInteger(), nullable=True))
    op.add_column(
        "memories",
        sa.Column("fingerprint", sa.String(length=32), nullable=False, server_default=""),
    )
    memories = sa.table(
        "memories",
        sa.column("id", sa.Integer()),
        sa.column("text", sa.Text()),
        sa.column("archived_at", sa.BigInteger()),
        sa.column("valid_until", sa.BigInteger()),
        sa.column("fingerprint", sa.String()),
    )
    op.execute(
        memories.update()
        .where(memories.c.archived_at.is_not(None))
        .values(valid_until=memories.c.archived_at)
    )
    conn = op.get_bind()
    after = 0
    while True:
        found = conn.execute(
            sa.select(memories.c.id, memories.c.text)
            .where(memories.c.id > after)
            .order_by(memories.c.id)
            .limit(_BATCH)
        ).all()
        if not found:
            break
        conn.execute(
            memories.update()
            .where(memories.c.id == sa.bindparam("pk"))
            .values(fingerprint=sa.bindparam("print")),
            [{"pk": pk, "print": fingerprint(text)} for pk, text in found],
        )
        after = found[-1].id
    op.create_index(
        "ix_memories_key_event",
        "memories",
        ["user_id", "scope", "conversation_id", "key", "event_at"],
        sqlite_where=sa.text("key <> ''"),
        postgresql_where=sa.text("key <> ''"),
    )
    op.create_index(
        "ix_memories_live_fingerprint",
        "memories",
        ["user_id", "fingerprint"],
        sqlite_where=sa.text("archived_at IS NULL"),
        postgresql_where=sa.text("archived_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_live_fingerprint", table_name="memories")
    op.drop_index("ix_memories_key_event", table_name="memories")
    op.drop_column("memories", "fingerprint")
    op.drop_column("memories", "valid_until")
    op.drop_column("memory_candidates", "event_at")
    op.drop_column("messages", "event_at")
