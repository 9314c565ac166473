"""The audit records of erasures (``user_erasures``): one per
``DeleteUserData`` of a user by someone else (an admin of the user's tenant,
or under ``--auth none``), kept outside every user's data (no ``user_id``
column, so no erasure deletes it), listed per tenant newest first
(``ListUserErasures``). A new table; nothing else is altered.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
MICROS = sa.BigInteger()


def upgrade() -> None:
    op.create_table(
        "user_erasures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("tenant_id", ID, nullable=False),
        sa.Column("erased_user_id", ID, nullable=False),
        sa.Column("erased_by", ID, nullable=False),
        sa.Column("by_admin", sa.Boolean(), nullable=False),
        sa.Column("erased_at", MICROS, nullable=False),
        sa.Column("deleted_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_user_erasures"),
    )
    op.create_index(
        "ix_user_erasures_tenant_id_erased_at_id",
        "user_erasures",
        ["tenant_id", "erased_at", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_user_erasures_tenant_id_erased_at_id", table_name="user_erasures")
    op.drop_table("user_erasures")
