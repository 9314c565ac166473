"""Background embedding: the backlog of entries waiting for the server's
embedder, the models it has embedded with (backfill progress and the lease),
and which stored vectors the server computed.

Vectors stored before this revision were computed on save by the server
when their model is one of its built-in ones (the hashing embedder, the
packaged bge-small and the static model): those are marked ``computed``, so
that a change of the server's model recomputes them; every other vector came
from a client and is kept as it is.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
MEMORY_KEY = sa.String(length=256)
MICROS = sa.BigInteger()

# The model names of the server's built-in embedders up to this revision.
_BUILT_IN = ("bge-small-en-v1.5-int8", "tokenlearn-static-model-0.1.1")


def upgrade() -> None:
    with op.batch_alter_table("memory_embeddings") as table:
        table.add_column(
            sa.Column("computed", sa.Boolean(), nullable=False, server_default=sa.text("false"))
        )
    embeddings = sa.table("memory_embeddings", sa.column("model"), sa.column("computed"))
    op.execute(
        embeddings.update()
        .where(embeddings.c.model.like("mnemo-hashing-%") | embeddings.c.model.in_(_BUILT_IN))
        .values(computed=True)
    )
    op.create_table(
        "embedding_backlog",
        sa.Column("memory_pk", sa.Integer(), nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_pk"],
            ["memories.id"],
            name="fk_embedding_backlog_memory_pk_memories",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.user_id"], name="fk_embedding_backlog_user_id_users"
        ),
        sa.PrimaryKeyConstraint("memory_pk", name="pk_embedding_backlog"),
    )
    op.create_index(
        "ix_embedding_backlog_user_id_memory_pk", "embedding_backlog", ["user_id", "memory_pk"]
    )
    op.create_table(
        "embedding_models",
        sa.Column("model", MEMORY_KEY, nullable=False),
        sa.Column("backfilled_through", sa.BigInteger(), nullable=False),
        sa.Column("backfill_until", sa.BigInteger(), nullable=False),
        sa.Column("backfill_done", sa.Boolean(), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=True),
        sa.Column("lease_until", MICROS, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("model", name="pk_embedding_models"),
    )


def downgrade() -> None:
    op.drop_table("embedding_models")
    op.drop_index("ix_embedding_backlog_user_id_memory_pk", table_name="embedding_backlog")
    op.drop_table("embedding_backlog")
    with op.batch_alter_table("memory_embeddings") as table:
        table.drop_column("computed")
