"""Conversations and what hangs off them: messages, failed runs, compaction
checkpoints and working memory. Child rows reference the conversation's
surrogate ``id`` (with its user), ``ON DELETE CASCADE``."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)

from mnemo_server.store.schema.columns import (
    ETAG,
    ID,
    MICROS,
    metadata,
    parent_fk,
    parent_key,
    parent_ref,
    surrogate_id_column,
    user_id_column,
)

conversations = Table(
    "conversations",
    metadata,
    surrogate_id_column(),
    user_id_column(),
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
    PrimaryKeyConstraint("user_id", "id"),
    parent_key("conversations"),
    UniqueConstraint("user_id", "conversation_id"),
    # ListConversations: most recently updated first.
    Index(None, "user_id", "updated_at", "conversation_id"),
    # The purge of expired temporary conversations (only they have an expire time).
    Index(None, "expire_at"),
)

messages = Table(
    "messages",
    metadata,
    parent_ref("conversation_pk"),
    Column("position", Integer, nullable=False),
    user_id_column(),
    Column("run_id", Text, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("role", Text, nullable=False),
    Column("message_json", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    # When it was said, when the client dated it (history appended after the
    # fact); NULL: its create time.
    Column("event_at", MICROS, nullable=True),
    PrimaryKeyConstraint("user_id", "conversation_pk", "position"),
    parent_fk("conversation_pk", "conversations"),
)

failed_runs = Table(
    "failed_runs",
    metadata,
    surrogate_id_column(),
    parent_ref("conversation_pk"),
    user_id_column(),
    Column("failed_run_id", ID, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("error_message", Text, nullable=False),
    Column("error_code", Text, nullable=False),
    Column("error_details_json", Text, nullable=False),
    # The partial messages: a JSON array of NewMessage (``domain.codec``).
    Column("messages_json", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    parent_fk("conversation_pk", "conversations"),
    UniqueConstraint("user_id", "conversation_pk", "failed_run_id"),
)

compaction_checkpoints = Table(
    "compaction_checkpoints",
    metadata,
    parent_ref("conversation_pk"),
    Column("generation", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    user_id_column(),
    # How many leading canonical messages the replacement stands for.
    Column("covered", Integer, nullable=False),
    # A JSON array of NewMessage (``domain.codec``).
    Column("replacement_json", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "conversation_pk", "generation", "seq"),
    parent_fk("conversation_pk", "conversations"),
)

working_memory = Table(
    "working_memory",
    metadata,
    parent_ref("conversation_pk"),
    user_id_column(),
    PrimaryKeyConstraint("user_id", "conversation_pk"),
    parent_fk("conversation_pk", "conversations"),
    Column("summary", Text, nullable=False),
    # A JSON array of Exchange (``domain.codec``), oldest first.
    Column("recent_json", Text, nullable=False),
    Column("etag", ETAG, nullable=False),
    Column("updated_at", MICROS, nullable=False),
)
