"""Documents (DocumentService): JSON values under a user, by namespace and key.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("namespace_path", sa.Text(), nullable=False),
        sa.Column("namespace_json", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("index_json", sa.Text(), nullable=True),
        sa.Column("embedding_dims", sa.Integer(), nullable=True),
        sa.Column("embeddings", sa.LargeBinary(), nullable=True),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.Column("ttl_micros", MICROS, nullable=True),
        sa.Column("expire_at", MICROS, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.user_id"], name="fk_documents_user_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_documents"),
        sa.UniqueConstraint("user_id", "document_id", name="uq_documents_user_id_document_id"),
    )
    op.create_index(
        "ix_documents_user_id_namespace_path", "documents", ["user_id", "namespace_path"]
    )
    op.create_index("ix_documents_expire_at", "documents", ["expire_at"])


def downgrade() -> None:
    op.drop_index("ix_documents_expire_at", table_name="documents")
    op.drop_index("ix_documents_user_id_namespace_path", table_name="documents")
    op.drop_table("documents")
