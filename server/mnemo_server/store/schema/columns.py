"""The pieces every table is built of: the one ``MetaData`` (with its naming
convention), the column types, and the columns and keys tables share."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
)

# Deterministic constraint names, so that migrations can name what they alter.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# Validated ids (user, conversation, request): 1-128 characters at the edge.
ID = String(128)
ETAG = String(32)
# Microseconds since the epoch, UTC.
MICROS = BigInteger
# Short enumerations (scope, source, state, operation).
SHORT_ENUM = String(16)


def user_id_column() -> Column[str]:
    """The owner of a user's row: a foreign key to ``users``."""
    return Column("user_id", ID, ForeignKey("users.user_id"), nullable=False)


# A surrogate id: BIGINT on PostgreSQL (ids never run out across every user of
# a sharded store); on SQLite the rowid (``INTEGER PRIMARY KEY``), which
# allocates the ids and keys the full-text table, so its key stays ``id``
# alone there (migration 0014) while PostgreSQL's is ``(user_id, id)``.
SURROGATE_ID = BigInteger().with_variant(Integer(), "sqlite")


def surrogate_id_column() -> Column[int]:
    return Column("id", SURROGATE_ID, nullable=False, autoincrement=True)


def parent_ref(column: str) -> Column[int]:
    """A reference to a user's conversation or entry (see ``parent_fk``)."""
    return Column(column, SURROGATE_ID, nullable=False)


def parent_fk(column: str, parent: str) -> ForeignKeyConstraint:
    """The foreign key of a ``parent_ref``: it names the user too, as a table
    sharded by user requires."""
    return ForeignKeyConstraint(
        ["user_id", column], [f"{parent}.user_id", f"{parent}.id"], ondelete="CASCADE"
    )


def parent_key(table: str) -> Index:
    """SQLite only: the unique ``(user_id, id)`` that composite foreign keys
    reference (PostgreSQL's primary key is that)."""
    return Index(f"uq_{table}_user_id_id", "user_id", "id", unique=True).ddl_if(dialect="sqlite")
