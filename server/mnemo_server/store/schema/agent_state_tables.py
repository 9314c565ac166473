"""What agent frameworks keep in Mnemo: documents (DocumentService, LangGraph's
store), graph checkpoints (CheckpointService) and app states
(AgentStateService, Google ADK)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from mnemo_server.store.schema.columns import (
    ETAG,
    ID,
    MICROS,
    metadata,
    surrogate_id_column,
    user_id_column,
)

# Documents (DocumentService, ``domain.documents``).
#
# One row per (user, namespace, key); ``document_id`` is derived from the
# address. ``namespace_path`` is each label percent-encoded and followed by
# ``/``, so that a namespace prefix is a string prefix. ``index_json``: the
# indexed texts (a JSON array of [path, text]; NULL: the whole value), whose
# embeddings, if any, are ``embeddings`` (float32, ``domain.vectors``, of
# ``embedding_dims`` each, concatenated in the order of the texts).
documents = Table(
    "documents",
    metadata,
    surrogate_id_column(),
    user_id_column(),
    Column("document_id", String(32), nullable=False),
    Column("namespace_path", Text, nullable=False),
    Column("namespace_json", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("value_json", Text, nullable=False),
    Column("index_json", Text, nullable=True),
    Column("embedding_dims", Integer, nullable=True),
    Column("embeddings", LargeBinary, nullable=True),
    Column("etag", ETAG, nullable=False),
    Column("created_at", MICROS, nullable=False),
    Column("updated_at", MICROS, nullable=False),
    Column("ttl_micros", MICROS, nullable=True),
    Column("expire_at", MICROS, nullable=True),
    PrimaryKeyConstraint("user_id", "id"),
    UniqueConstraint("user_id", "document_id"),
    # Search and namespace listing: a user's documents under a prefix.
    Index(None, "user_id", "namespace_path"),
    # The purge of expired documents.
    Index(None, "expire_at"),
)

# Graph checkpoints (``domain.checkpoints``, ``store.checkpoints``): the
# client's serialized bytes as given, keyed by thread, namespace and id; the
# metadata as JSON text, its ``run_id`` copied into a column for
# ``DeleteCheckpointsForRuns``. Not ``compaction_checkpoints`` (conversation
# history), hence the prefix.

graph_checkpoints = Table(
    "graph_checkpoints",
    metadata,
    user_id_column(),
    Column("thread_id", ID, nullable=False),
    Column("checkpoint_ns", Text, nullable=False),
    Column("checkpoint_id", ID, nullable=False),
    Column("parent_checkpoint_id", ID, nullable=False),
    Column("checkpoint_type", Text, nullable=False),
    Column("checkpoint", LargeBinary, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("run_id", ID, nullable=True),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "thread_id", "checkpoint_ns", "checkpoint_id"),
    Index(None, "user_id", "run_id"),
)

graph_checkpoint_writes = Table(
    "graph_checkpoint_writes",
    metadata,
    user_id_column(),
    Column("thread_id", ID, nullable=False),
    Column("checkpoint_ns", Text, nullable=False),
    Column("checkpoint_id", ID, nullable=False),
    Column("task_id", ID, nullable=False),
    Column("idx", Integer, nullable=False),
    Column("channel", Text, nullable=False),
    Column("value_type", Text, nullable=False),
    Column("value", LargeBinary, nullable=False),
    Column("task_path", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint(
        "user_id", "thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"
    ),
)

# App states (AgentStateService, ``domain.app_state``): a tenant's JSON object
# per app, Google ADK's ``app:`` state. No ``user_id``: the tenant's, not a
# user's (no user's export, import, erasure or change feed holds it). ``etag``
# "" for a row a write has only just made sure of.
app_states = Table(
    "app_states",
    metadata,
    Column("tenant_id", ID, primary_key=True),
    Column("app_id", ID, primary_key=True),
    Column("state_json", Text, nullable=False),
    Column("etag", ETAG, nullable=False),
    Column("updated_at", MICROS, nullable=False),
)
