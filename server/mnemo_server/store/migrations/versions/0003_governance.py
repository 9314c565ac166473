"""Governance: consent and the memory switch per user, analytics events, and
the index the purge of expired temporary conversations scans.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()
SHORT_ENUM = sa.String(length=16)


def _user_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.user_id"], name=f"fk_{table}_user_id_users", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_index("ix_conversations_expire_at", "conversations", ["expire_at"])
    op.create_table(
        "user_settings",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("consent_state", SHORT_ENUM, nullable=False),
        sa.Column("policy_version", ID, nullable=False),
        sa.Column("consent_updated_at", MICROS, nullable=True),
        sa.Column("memory_enabled", sa.Boolean(), nullable=False),
        sa.Column("settings_etag", ETAG, nullable=False),
        sa.Column("settings_updated_at", MICROS, nullable=True),
        _user_fk("user_settings"),
        sa.PrimaryKeyConstraint("user_id", name="pk_user_settings"),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("tenant_id", ID, nullable=False),
        sa.Column("event_id", ID, nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("attributes_json", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        _user_fk("events"),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("user_id", "event_id", name="uq_events_user_id_event_id"),
    )
    op.create_index("ix_events_user_id_created_at_id", "events", ["user_id", "created_at", "id"])
    op.create_index(
        "ix_events_tenant_id_created_at_id", "events", ["tenant_id", "created_at", "id"]
    )


def downgrade() -> None:
    op.drop_table("events")
    op.drop_table("user_settings")
    op.drop_index("ix_conversations_expire_at", table_name="conversations")
