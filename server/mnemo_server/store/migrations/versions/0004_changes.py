"""The change feed: per-user change rows and cursor counters, and the cursor
an idempotency record replays.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()
SHORT_ENUM = sa.String(length=16)


def upgrade() -> None:
    op.create_table(
        "change_cursors",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("last_cursor", sa.BigInteger(), nullable=False),
        sa.Column("last_change_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_change_cursors"),
    )
    op.create_table(
        "changes",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=False),
        sa.Column("operation", SHORT_ENUM, nullable=False),
        sa.Column("resource_name", sa.Text(), nullable=False),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("state_type", sa.String(length=32), nullable=True),
        sa.Column("state_json", sa.Text(), nullable=True),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "cursor", name="pk_changes"),
    )
    op.create_index("ix_changes_created_at", "changes", ["created_at"])
    with op.batch_alter_table("idempotency_records") as batch:
        batch.add_column(
            sa.Column("change_cursor", sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("idempotency_records") as batch:
        batch.drop_column("change_cursor")
    op.drop_index("ix_changes_created_at", table_name="changes")
    op.drop_table("changes")
    op.drop_table("change_cursors")
