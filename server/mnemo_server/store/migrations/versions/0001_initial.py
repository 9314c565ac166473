"""The initial schema: users, conversations and their history, failed runs,
compaction checkpoints, working memory and idempotency records.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()


def _user_id(table: str) -> list[Any]:
    return [
        sa.Column("user_id", ID, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.user_id"], name=f"fk_{table}_user_id_users"),
    ]


def _conversation_ref(table: str) -> list[Any]:
    return [
        sa.Column("conversation_pk", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_pk"],
            ["conversations.id"],
            name=f"fk_{table}_conversation_pk_conversations",
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("tenant_id", ID, server_default="", nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_users"),
    )
    op.create_table(
        "conversations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        *_user_id("conversations"),
        sa.Column("conversation_id", ID, nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("temporary", sa.Boolean(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.Column("expire_at", MICROS, nullable=True),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("checkpoint_seq", sa.Integer(), nullable=False),
        sa.Column("etag", ETAG, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_conversations"),
        sa.UniqueConstraint(
            "user_id", "conversation_id", name="uq_conversations_user_id_conversation_id"
        ),
    )
    op.create_index(
        "ix_conversations_user_id_updated_at_conversation_id",
        "conversations",
        ["user_id", "updated_at", "conversation_id"],
    )
    op.create_table(
        "messages",
        *_conversation_ref("messages"),
        sa.Column("position", sa.Integer(), nullable=False),
        *_user_id("messages"),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("message_json", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("conversation_pk", "position", name="pk_messages"),
    )
    op.create_table(
        "failed_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        *_conversation_ref("failed_runs"),
        *_user_id("failed_runs"),
        sa.Column("failed_run_id", ID, nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=False),
        sa.Column("error_code", sa.Text(), nullable=False),
        sa.Column("error_details_json", sa.Text(), nullable=False),
        sa.Column("messages_json", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_failed_runs"),
        sa.UniqueConstraint(
            "conversation_pk", "failed_run_id", name="uq_failed_runs_conversation_pk_failed_run_id"
        ),
    )
    op.create_table(
        "compaction_checkpoints",
        *_conversation_ref("compaction_checkpoints"),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        *_user_id("compaction_checkpoints"),
        sa.Column("covered", sa.Integer(), nullable=False),
        sa.Column("replacement_json", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint(
            "conversation_pk", "generation", "seq", name="pk_compaction_checkpoints"
        ),
    )
    op.create_table(
        "working_memory",
        *_conversation_ref("working_memory"),
        *_user_id("working_memory"),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("recent_json", sa.Text(), nullable=False),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("conversation_pk", name="pk_working_memory"),
    )
    op.create_table(
        "idempotency_records",
        *_user_id("idempotency_records"),
        sa.Column("request_id", ID, nullable=False),
        sa.Column("scope", sa.String(length=64), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "request_id", name="pk_idempotency_records"),
    )
    op.create_index("ix_idempotency_records_created_at", "idempotency_records", ["created_at"])


def downgrade() -> None:
    op.drop_table("idempotency_records")
    op.drop_table("working_memory")
    op.drop_table("compaction_checkpoints")
    op.drop_table("failed_runs")
    op.drop_table("messages")
    op.drop_table("conversations")
    op.drop_table("users")
