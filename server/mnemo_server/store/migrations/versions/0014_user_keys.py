"""Every per-user key includes ``user_id``: what a database sharded by user
(Citus, ``mnemo migrate --distribute``) requires of the primary keys, unique
constraints and foreign keys of its distributed tables.

- The surrogate-keyed tables (``conversations``, ``memories``, ``events``,
  ``failed_runs``, ``documents``) get the primary key ``(user_id, id)`` on
  PostgreSQL, and their ids become ``BIGINT`` (with their sequences), so
  that ids never run out across every user of a sharded store.
- The tables that hang off a conversation or an entry (``messages``,
  ``compaction_checkpoints``, ``working_memory``, ``failed_runs``,
  ``memory_versions``, ``memory_embeddings``, ``embedding_backlog``) get a
  leading ``user_id`` in their primary key and unique constraint, and their
  foreign key becomes ``(user_id, conversation_pk) → conversations(user_id,
  id)`` or ``(user_id, memory_pk) → memories(user_id, id)``.
- Walks over every user's rows by id (the embedder's backfill and backlog)
  keep an index of their own: ``ix_memories_id`` (PostgreSQL: the id no
  longer leads a key) and ``ix_embedding_backlog_memory_pk`` (replacing
  ``(user_id, memory_pk)``, now the primary key); ``ix_memories_user_id_id``
  goes (the new primary key serves its reads).

SQLite keeps ``id INTEGER PRIMARY KEY`` on the surrogate-keyed tables: that
is its rowid, which allocates the ids and keys the full-text table
(``memories_fts``); a composite primary key would take both away, and
SQLite is never sharded. The composite foreign keys there reference a unique
index ``(user_id, id)`` of ``conversations`` and ``memories`` instead. Its
child tables are rebuilt (SQLite cannot alter a key in place); the parents
are never rebuilt, since dropping a parent cascades to its children.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from alembic import op
from alembic.operations import BatchOperations

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None

# Parents whose id is referenced by children, and those whose id is not.
_REFERENCED = ("conversations", "memories")
_SURROGATE = (*_REFERENCED, "events", "failed_runs", "documents")


class _Child(NamedTuple):
    table: str
    parent: str
    ref: str  # conversation_pk or memory_pk
    key: tuple[str, ...]  # the primary key before, without user_id
    unique: tuple[str, ...] = ()  # a unique constraint before, without user_id

    @property
    def old_fk(self) -> str:
        return f"fk_{self.table}_{self.ref}_{self.parent}"

    @property
    def new_fk(self) -> str:
        return f"fk_{self.table}_user_id_{self.ref}_{self.parent}"

    def unique_name(self, *, with_user: bool) -> str:
        columns = ("user_id", *self.unique) if with_user else self.unique
        return f"uq_{self.table}_{'_'.join(columns)}"


_CHILDREN = (
    _Child("messages", "conversations", "conversation_pk", ("conversation_pk", "position")),
    _Child(
        "compaction_checkpoints",
        "conversations",
        "conversation_pk",
        ("conversation_pk", "generation", "seq"),
    ),
    _Child("working_memory", "conversations", "conversation_pk", ("conversation_pk",)),
    _Child(
        "failed_runs",
        "conversations",
        "conversation_pk",
        ("id",),
        unique=("conversation_pk", "failed_run_id"),
    ),
    _Child("memory_versions", "memories", "memory_pk", ("memory_pk", "version")),
    _Child("memory_embeddings", "memories", "memory_pk", ("memory_pk",)),
    _Child("embedding_backlog", "memories", "memory_pk", ("memory_pk",)),
)


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def upgrade() -> None:
    if _sqlite():
        _upgrade_sqlite()
    else:
        _upgrade_postgresql()
    op.drop_index("ix_memories_user_id_id", table_name="memories")
    op.drop_index("ix_embedding_backlog_user_id_memory_pk", table_name="embedding_backlog")
    op.create_index("ix_embedding_backlog_memory_pk", "embedding_backlog", ["memory_pk"])


def downgrade() -> None:
    op.drop_index("ix_embedding_backlog_memory_pk", table_name="embedding_backlog")
    op.create_index(
        "ix_embedding_backlog_user_id_memory_pk", "embedding_backlog", ["user_id", "memory_pk"]
    )
    op.create_index("ix_memories_user_id_id", "memories", ["user_id", "id"])
    if _sqlite():
        _downgrade_sqlite()
    else:
        _downgrade_postgresql()


# ---------------------------------------------------------------- PostgreSQL
#
# One ALTER TABLE per table, so that a table whose column type changes is
# rewritten once.


def _upgrade_postgresql() -> None:
    for child in _CHILDREN:
        op.drop_constraint(child.old_fk, child.table, type_="foreignkey")
    for table in _SURROGATE:
        op.execute(
            f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}, "
            "ALTER COLUMN id TYPE BIGINT, "
            f"ADD CONSTRAINT pk_{table} PRIMARY KEY (user_id, id)"
        )
        op.execute(f"ALTER SEQUENCE {table}_id_seq AS BIGINT")
    for child in _CHILDREN:
        # failed_runs is keyed by its own id, replaced above.
        keyed_here = child.table not in _SURROGATE
        actions = [f"DROP CONSTRAINT pk_{child.table}"] if keyed_here else []
        if child.unique:
            actions.append(f"DROP CONSTRAINT {child.unique_name(with_user=False)}")
        actions.append(f"ALTER COLUMN {child.ref} TYPE BIGINT")
        if keyed_here:
            actions.append(
                f"ADD CONSTRAINT pk_{child.table} PRIMARY KEY (user_id, {', '.join(child.key)})"
            )
        if child.unique:
            actions.append(
                f"ADD CONSTRAINT {child.unique_name(with_user=True)} "
                f"UNIQUE (user_id, {', '.join(child.unique)})"
            )
        actions.append(
            f"ADD CONSTRAINT {child.new_fk} FOREIGN KEY (user_id, {child.ref}) "
            f"REFERENCES {child.parent} (user_id, id) ON DELETE CASCADE"
        )
        op.execute(f"ALTER TABLE {child.table} {', '.join(actions)}")
    op.create_index("ix_memories_id", "memories", ["id"])


def _downgrade_postgresql() -> None:
    op.drop_index("ix_memories_id", table_name="memories")
    for child in _CHILDREN:
        actions = [f"DROP CONSTRAINT {child.new_fk}"]
        if child.unique:
            actions.append(f"DROP CONSTRAINT {child.unique_name(with_user=True)}")
        if child.table not in _SURROGATE:
            actions.append(f"DROP CONSTRAINT pk_{child.table}")
            actions.append(f"ADD CONSTRAINT pk_{child.table} PRIMARY KEY ({', '.join(child.key)})")
        actions.append(f"ALTER COLUMN {child.ref} TYPE INTEGER")
        if child.unique:
            actions.append(
                f"ADD CONSTRAINT {child.unique_name(with_user=False)} "
                f"UNIQUE ({', '.join(child.unique)})"
            )
        op.execute(f"ALTER TABLE {child.table} {', '.join(actions)}")
    for table in _SURROGATE:
        op.execute(f"ALTER SEQUENCE {table}_id_seq AS INTEGER")
        op.execute(
            f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}, "
            "ALTER COLUMN id TYPE INTEGER, "
            f"ADD CONSTRAINT pk_{table} PRIMARY KEY (id)"
        )
    for child in _CHILDREN:
        op.create_foreign_key(
            child.old_fk, child.table, child.parent, [child.ref], ["id"], ondelete="CASCADE"
        )


# ---------------------------------------------------------------- SQLite


@contextmanager
def _rebuilt(child: _Child) -> Iterator[BatchOperations]:
    """The child table rebuilt (a new table, the rows copied, the old one
    dropped). Alembic's copy keeps the reflected key's column flags and
    SQLAlchemy warns that the new key replaces them, which is the point."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*as primary_key=True, not matching locally specified columns"
        )
        with op.batch_alter_table(child.table, recreate="always") as batch:
            yield batch


def _upgrade_sqlite() -> None:
    for table in _REFERENCED:
        op.create_index(f"uq_{table}_user_id_id", table, ["user_id", "id"], unique=True)
    for child in _CHILDREN:
        with _rebuilt(child) as batch:
            batch.drop_constraint(child.old_fk, type_="foreignkey")
            if child.unique:
                batch.drop_constraint(child.unique_name(with_user=False), type_="unique")
                batch.create_unique_constraint(
                    child.unique_name(with_user=True), ["user_id", *child.unique]
                )
            if child.table not in _SURROGATE:
                batch.create_primary_key(f"pk_{child.table}", ["user_id", *child.key])
            batch.create_foreign_key(
                child.new_fk,
                child.parent,
                ["user_id", child.ref],
                ["user_id", "id"],
                ondelete="CASCADE",
            )


def _downgrade_sqlite() -> None:
    for child in _CHILDREN:
        with _rebuilt(child) as batch:
            batch.drop_constraint(child.new_fk, type_="foreignkey")
            if child.unique:
                batch.drop_constraint(child.unique_name(with_user=True), type_="unique")
                batch.create_unique_constraint(child.unique_name(with_user=False), child.unique)
            if child.table not in _SURROGATE:
                batch.create_primary_key(f"pk_{child.table}", list(child.key))
            batch.create_foreign_key(
                child.old_fk, child.parent, [child.ref], ["id"], ondelete="CASCADE"
            )
    for table in _REFERENCED:
        op.drop_index(f"uq_{table}_user_id_id", table_name=table)
