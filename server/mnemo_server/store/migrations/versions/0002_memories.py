"""Long-term memory: entries, their earlier versions, vectors, tombstones,
extraction candidates, the per-user memory state row, and the full-text index
(SQLite: an FTS5 table; PostgreSQL: a GIN expression index).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=128)
ETAG = sa.String(length=32)
MICROS = sa.BigInteger()
MEMORY_KEY = sa.String(length=256)
SHORT_ENUM = sa.String(length=16)
LIVE_KEYED = "archived_at IS NULL AND key <> ''"

# The tokens are already normalized and stemmed in Python
# (mnemo_server.domain.text_search): 'ascii' only splits them at the spaces.
# Contentless: the index keeps no copy of the documents.
_SQLITE_FTS = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5(search_document, content='', tokenize='ascii')"
)
# The same tokens as a tsvector, without PostgreSQL's parser or dictionaries;
# only live entries are ever searched.
_POSTGRES_GIN = (
    "CREATE INDEX ix_memories_search ON memories USING gin "
    "(array_to_tsvector(string_to_array(search_document, ' '))) "
    "WHERE archived_at IS NULL"
)


def _user_id(table: str) -> list[Any]:
    return [
        sa.Column("user_id", ID, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.user_id"], name=f"fk_{table}_user_id_users"),
    ]


def _memory_ref(table: str) -> list[Any]:
    return [
        sa.Column("memory_pk", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_pk"],
            ["memories.id"],
            name=f"fk_{table}_memory_pk_memories",
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "memory_user_state",
        *_user_id("memory_user_state"),
        sa.Column("vectors_version", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_memory_user_state"),
    )
    op.create_table(
        "memories",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        *_user_id("memories"),
        sa.Column("memory_id", ID, nullable=False),
        sa.Column("key", MEMORY_KEY, nullable=False),
        sa.Column("scope", SHORT_ENUM, nullable=False),
        sa.Column("conversation_id", ID, nullable=False),
        sa.Column("source", SHORT_ENUM, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.Column("archived_at", MICROS, nullable=True),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("search_document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
        sa.UniqueConstraint("user_id", "memory_id", name="uq_memories_user_id_memory_id"),
        sa.CheckConstraint(
            "(scope = 'identity' AND conversation_id = '') "
            "OR (scope = 'conversation' AND conversation_id <> '')",
            name="ck_memories_scope_conversation",
        ),
    )
    op.create_index(
        "ix_memories_user_id_created_at_memory_id",
        "memories",
        ["user_id", "created_at", "memory_id"],
    )
    op.create_index(
        "uq_memories_live_key",
        "memories",
        ["user_id", "scope", "conversation_id", "key"],
        unique=True,
        sqlite_where=sa.text(LIVE_KEYED),
        postgresql_where=sa.text(LIVE_KEYED),
    )
    op.create_table(
        "memory_versions",
        *_memory_ref("memory_versions"),
        sa.Column("version", sa.Integer(), nullable=False),
        *_user_id("memory_versions"),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("etag", ETAG, nullable=False),
        sa.Column("updated_at", MICROS, nullable=False),
        sa.Column("replaced_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("memory_pk", "version", name="pk_memory_versions"),
    )
    op.create_table(
        "memory_embeddings",
        *_memory_ref("memory_embeddings"),
        *_user_id("memory_embeddings"),
        sa.Column("model", MEMORY_KEY, nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("memory_pk", name="pk_memory_embeddings"),
    )
    op.create_index("ix_memory_embeddings_user_id_model", "memory_embeddings", ["user_id", "model"])
    op.create_table(
        "memory_tombstones",
        *_user_id("memory_tombstones"),
        sa.Column("memory_id", ID, nullable=False),
        sa.Column("key", MEMORY_KEY, nullable=False),
        sa.Column("deleted_at", MICROS, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "memory_id", name="pk_memory_tombstones"),
    )
    op.create_index(
        "ix_memory_tombstones_user_id_deleted_at",
        "memory_tombstones",
        ["user_id", "deleted_at"],
    )
    op.create_table(
        "memory_candidates",
        *_user_id("memory_candidates"),
        sa.Column("candidate_id", ID, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("key", MEMORY_KEY, nullable=False),
        sa.Column("scope", SHORT_ENUM, nullable=False),
        sa.Column("memory_conversation_id", ID, nullable=False),
        sa.Column("source", SHORT_ENUM, nullable=False),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("embedding_model", MEMORY_KEY, nullable=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("state", SHORT_ENUM, nullable=False),
        sa.Column("conversation_id", ID, nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("extractor", sa.Text(), nullable=False),
        sa.Column("created_at", MICROS, nullable=False),
        sa.Column("resolved_at", MICROS, nullable=True),
        sa.Column("saved_memory_id", ID, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "candidate_id", name="pk_memory_candidates"),
    )
    op.create_index(
        "ix_memory_candidates_user_id_created_at_candidate_id",
        "memory_candidates",
        ["user_id", "created_at", "candidate_id"],
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(_SQLITE_FTS)
    else:
        op.execute(_POSTGRES_GIN)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE memories_fts")
    else:
        op.execute("DROP INDEX ix_memories_search")
    op.drop_table("memory_candidates")
    op.drop_table("memory_tombstones")
    op.drop_table("memory_embeddings")
    op.drop_table("memory_versions")
    op.drop_table("memories")
    op.drop_table("memory_user_state")
