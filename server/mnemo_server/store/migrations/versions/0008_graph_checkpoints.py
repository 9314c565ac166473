"""Graph checkpoints (CheckpointService): ``graph_checkpoints`` and their
pending writes, ``graph_checkpoint_writes``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
MICROS = sa.BigInteger()


def _user_id(table: str) -> sa.Column[str]:
    return sa.Column(
        "user_id",
        ID,
        sa.ForeignKey("users.user_id", name=f"fk_{table}_user_id_users"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "graph_checkpoints",
        _user_id("graph_checkpoints"),
        sa.Column("thread_id", ID, nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", ID, nullable=False),
        sa.Column("parent_checkpoint_id", ID, nullable=False),
        sa.Column("checkpoint_type", sa.Text(), nullable=False),
        sa.Column("checkpoint", sa.LargeBinary(), nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("run_id", ID, nullable=True),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint(
            "user_id", "thread_id", "checkpoint_ns", "checkpoint_id", name="pk_graph_checkpoints"
        ),
    )
    op.create_index(
        "ix_graph_checkpoints_user_id_run_id", "graph_checkpoints", ["user_id", "run_id"]
    )
    op.create_table(
        "graph_checkpoint_writes",
        _user_id("graph_checkpoint_writes"),
        sa.Column("thread_id", ID, nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", ID, nullable=False),
        sa.Column("task_id", ID, nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("value_type", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column("task_path", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint(
            "user_id",
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name="pk_graph_checkpoint_writes",
        ),
    )


def downgrade() -> None:
    op.drop_table("graph_checkpoint_writes")
    op.drop_index("ix_graph_checkpoints_user_id_run_id", table_name="graph_checkpoints")
    op.drop_table("graph_checkpoints")
