"""The relational schema (SQLAlchemy Core). Alembic migrations create it; this
module describes it for queries and for the test that compares the two.

Conventions:

- Every table carries ``user_id`` (a foreign key to ``users``) and every query
  is keyed by it, so the schema can later be sharded by user.
- Times are integer microseconds since the Unix epoch (UTC): exact on every
  backend and trivially ordered; the store converts them to aware datetimes.
- Conversations have a surrogate integer key ``id`` that child rows reference
  (``ON DELETE CASCADE``); the client's id is ``conversation_id``, ``""`` for a
  user's default conversation (working memory only).
- Etags are opaque random strings, new on every write.
- Verbatim client JSON (messages, metadata) is stored as TEXT, never re-encoded.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
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


def _user_id() -> Column[str]:
    return Column("user_id", ID, ForeignKey("users.user_id"), nullable=False)


def _conversation_ref(*, primary_key: bool = False) -> Column[int]:
    return Column(
        "conversation_pk",
        Integer,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        nullable=False,
        primary_key=primary_key,
    )


users = Table(
    "users",
    metadata,
    Column("user_id", ID, primary_key=True),
    Column("tenant_id", ID, nullable=False, server_default=""),
    Column("created_at", MICROS, nullable=False),
)

conversations = Table(
    "conversations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _user_id(),
    Column("conversation_id", ID, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("temporary", Boolean, nullable=False),
    Column("created_at", MICROS, nullable=False),
    Column("updated_at", MICROS, nullable=False),
    Column("expire_at", MICROS, nullable=True),
    Column("message_count", Integer, nullable=False),
    # Bumped by a clear: every older compaction revision becomes stale.
    Column("generation", Integer, nullable=False),
    # Sequence of the latest compaction checkpoint of this generation (0: none).
    Column("checkpoint_seq", Integer, nullable=False),
    Column("etag", ETAG, nullable=False),
    UniqueConstraint("user_id", "conversation_id"),
    # ListConversations: most recently updated first.
    Index(None, "user_id", "updated_at", "conversation_id"),
)

messages = Table(
    "messages",
    metadata,
    _conversation_ref(),
    Column("position", Integer, nullable=False),
    _user_id(),
    Column("run_id", Text, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("role", Text, nullable=False),
    Column("message_json", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("conversation_pk", "position"),
)

failed_runs = Table(
    "failed_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _conversation_ref(),
    _user_id(),
    Column("failed_run_id", ID, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("error_message", Text, nullable=False),
    Column("error_code", Text, nullable=False),
    Column("error_details_json", Text, nullable=False),
    # The partial messages: a JSON array of NewMessage (``domain.codec``).
    Column("messages_json", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    UniqueConstraint("conversation_pk", "failed_run_id"),
)

compaction_checkpoints = Table(
    "compaction_checkpoints",
    metadata,
    _conversation_ref(),
    Column("generation", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    _user_id(),
    # How many leading canonical messages the replacement stands for.
    Column("covered", Integer, nullable=False),
    # A JSON array of NewMessage (``domain.codec``).
    Column("replacement_json", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("conversation_pk", "generation", "seq"),
)

working_memory = Table(
    "working_memory",
    metadata,
    _conversation_ref(primary_key=True),
    _user_id(),
    Column("summary", Text, nullable=False),
    # A JSON array of Exchange (``domain.codec``), oldest first.
    Column("recent_json", Text, nullable=False),
    Column("etag", ETAG, nullable=False),
    Column("updated_at", MICROS, nullable=False),
)

idempotency_records = Table(
    "idempotency_records",
    metadata,
    _user_id(),
    Column("request_id", ID, nullable=False),
    # The operation (RPC name) and the request fingerprint (sha256 hex).
    Column("scope", String(64), nullable=False),
    Column("fingerprint", String(64), nullable=False),
    # The domain result of the first call (``domain.codec``).
    Column("result_json", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "request_id"),
    # Pruning of records past the retention window.
    Index(None, "created_at"),
)

__all__ = [
    "compaction_checkpoints",
    "conversations",
    "failed_runs",
    "idempotency_records",
    "messages",
    "metadata",
    "users",
    "working_memory",
]
