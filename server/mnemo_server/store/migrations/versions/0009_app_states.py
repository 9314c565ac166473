"""App states (AgentStateService): a tenant's JSON state per app.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()


def upgrade() -> None:
    op.create_table(
        "app_states",
        sa.Column("tenant_id", ID, nullable=False),
        sa.Column("app_id", ID, nullable=False),
        sa.Column("state_json", sa.Text(), nullable=False),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "app_id", name="pk_app_states"),
    )


def downgrade() -> None:
    op.drop_table("app_states")
