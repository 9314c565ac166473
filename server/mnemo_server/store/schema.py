"""The relational schema (SQLAlchemy Core). Alembic migrations create it; this
module describes it for queries and for the test that compares the two.

Conventions:

- Every table carries ``user_id`` (a foreign key to ``users``, except the
  change feed's two tables, which outlive an erasure) and every query is
  keyed by it, so the schema can later be sharded by user.
- Times are integer microseconds since the Unix epoch (UTC): exact on every
  backend and trivially ordered; the store converts them to aware datetimes.
- Conversations have a surrogate integer key ``id`` that child rows reference
  (``ON DELETE CASCADE``); the client's id is ``conversation_id``, ``""`` for a
  user's default conversation (working memory only).
- Etags are opaque random strings, new on every write.
- Verbatim client JSON (messages, metadata) is stored as TEXT, never re-encoded.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    column,
    table,
    text,
)
from sqlalchemy.sql.ddl import DDLIf
from sqlalchemy.sql.expression import TableClause

from mnemo_server.domain.text_search import MAX_TOKEN_CHARS

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


# A surrogate id: BIGINT on PostgreSQL (ids never run out across every user of
# a sharded store); on SQLite the rowid (``INTEGER PRIMARY KEY``), which
# allocates the ids and keys the full-text table, so its key stays ``id``
# alone there (migration 0014) while PostgreSQL's is ``(user_id, id)``.
SURROGATE_ID = BigInteger().with_variant(Integer(), "sqlite")


def _surrogate_id() -> Column[int]:
    return Column("id", SURROGATE_ID, nullable=False, autoincrement=True)


def _parent_ref(column: str) -> Column[int]:
    """A reference to a user's conversation or entry (see ``_parent_fk``)."""
    return Column(column, SURROGATE_ID, nullable=False)


def _parent_fk(column: str, parent: str) -> ForeignKeyConstraint:
    """The foreign key of a ``_parent_ref``: it names the user too, as a table
    sharded by user requires."""
    return ForeignKeyConstraint(
        ["user_id", column], [f"{parent}.user_id", f"{parent}.id"], ondelete="CASCADE"
    )


def _parent_key(table: str) -> Index:
    """SQLite only: the unique ``(user_id, id)`` that composite foreign keys
    reference (PostgreSQL's primary key is that)."""
    return Index(f"uq_{table}_user_id_id", "user_id", "id", unique=True).ddl_if(dialect="sqlite")


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
    _surrogate_id(),
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
    PrimaryKeyConstraint("user_id", "id"),
    _parent_key("conversations"),
    UniqueConstraint("user_id", "conversation_id"),
    # ListConversations: most recently updated first.
    Index(None, "user_id", "updated_at", "conversation_id"),
    # The purge of expired temporary conversations (only they have an expire time).
    Index(None, "expire_at"),
)

messages = Table(
    "messages",
    metadata,
    _parent_ref("conversation_pk"),
    Column("position", Integer, nullable=False),
    _user_id(),
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
    _parent_fk("conversation_pk", "conversations"),
)

failed_runs = Table(
    "failed_runs",
    metadata,
    _surrogate_id(),
    _parent_ref("conversation_pk"),
    _user_id(),
    Column("failed_run_id", ID, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("error_message", Text, nullable=False),
    Column("error_code", Text, nullable=False),
    Column("error_details_json", Text, nullable=False),
    # The partial messages: a JSON array of NewMessage (``domain.codec``).
    Column("messages_json", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    _parent_fk("conversation_pk", "conversations"),
    UniqueConstraint("user_id", "conversation_pk", "failed_run_id"),
)

compaction_checkpoints = Table(
    "compaction_checkpoints",
    metadata,
    _parent_ref("conversation_pk"),
    Column("generation", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    _user_id(),
    # How many leading canonical messages the replacement stands for.
    Column("covered", Integer, nullable=False),
    # A JSON array of NewMessage (``domain.codec``).
    Column("replacement_json", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "conversation_pk", "generation", "seq"),
    _parent_fk("conversation_pk", "conversations"),
)

working_memory = Table(
    "working_memory",
    metadata,
    _parent_ref("conversation_pk"),
    _user_id(),
    PrimaryKeyConstraint("user_id", "conversation_pk"),
    _parent_fk("conversation_pk", "conversations"),
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
    # The cursor of the last change the first call appended (0: none); a
    # replay answers it as its ``change_cursor``.
    Column("change_cursor", BigInteger, nullable=False, server_default="0"),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "request_id"),
    # Pruning of records past the retention window.
    Index(None, "created_at"),
)

# --- long-term memory (gecx-chat) -----------------------------------------
#
# Entries are append-only rows: a save inserts; a keyed save archives
# (``archived_at``) the live entry of the same (user, scope, conversation, key);
# an update moves the previous text to ``memory_versions``. Memory writes of a
# user lock that user's ``memory_user_state`` row first (PostgreSQL; SQLite has
# one writer anyway), so keyed saves of one user are serialized; the partial
# unique index below is the database's own guarantee of one live entry per key.
#
# Full text (``store.memories.text_index``): ``search_document`` holds the stems
# of ``text``, each prefixed with the entry's visibility key. SQLite indexes it in the contentless FTS5 table ``memories_fts``
# (rowid = ``memories.id``; it holds exactly the unarchived entries, kept in
# sync by the store in the writing transaction); PostgreSQL in the partial GIN
# index ``ix_memories_search`` on
# ``array_to_tsvector(string_to_array(search_document, ' '))``. Both are
# created by raw SQL in migrations only (see ``UNMANAGED_NAMES``).

MEMORY_KEY = String(256)
SHORT_ENUM = String(16)

memory_user_state = Table(
    "memory_user_state",
    metadata,
    Column("user_id", ID, ForeignKey("users.user_id"), primary_key=True),
    # Bumped in the transaction of every change to the user's set of live
    # vectors (embedding written or removed, entry archived or deleted): a
    # server process reloads its cached vector matrix when it changes.
    Column("vectors_version", BigInteger, nullable=False),
)

memories = Table(
    "memories",
    metadata,
    _surrogate_id(),
    _user_id(),
    Column("memory_id", ID, nullable=False),
    Column("key", MEMORY_KEY, nullable=False),
    Column("scope", SHORT_ENUM, nullable=False),
    # "" with identity scope. No foreign key: an offline device may save a
    # conversation-scoped entry before the server has seen the conversation.
    Column("conversation_id", ID, nullable=False),
    Column("source", SHORT_ENUM, nullable=False),
    Column("text", Text, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("created_at", MICROS, nullable=False),
    Column("updated_at", MICROS, nullable=False),
    Column("archived_at", MICROS, nullable=True),
    # When the fact was stated or observed (the save's time unless the client
    # gave one: an imported or late entry keeps its own).
    Column("event_at", MICROS, nullable=False, server_default=text("0")),
    # A keyed entry's validity ends at the event time of the entry that
    # superseded it (NULL: still valid); it began at its own ``event_at``.
    Column("valid_until", MICROS, nullable=True),
    # ``domain.sameness.fingerprint(text)``: exact duplicates by index.
    Column("fingerprint", String(32), nullable=False, server_default=""),
    Column("etag", ETAG, nullable=False),
    # 1, then one more per update (earlier ones are in memory_versions).
    Column("version", Integer, nullable=False),
    # ``domain.text_search.search_document(text)``: what the full-text index indexes.
    Column("search_document", Text, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    _parent_key("memories"),
    UniqueConstraint("user_id", "memory_id"),
    CheckConstraint(
        "(scope = 'identity' AND conversation_id = '') "
        "OR (scope = 'conversation' AND conversation_id <> '')",
        name="scope_conversation",
    ),
    # ListMemories: newest first.
    Index(None, "user_id", "created_at", "memory_id"),
    # PostgreSQL: the embedder's backfill walks every user's entries by id
    # (on SQLite the id is the rowid).
    Index("ix_memories_id", "id").ddl_if(dialect="postgresql"),
    # At most one live entry per (user, scope, conversation, key).
    Index(
        "uq_memories_live_key",
        "user_id",
        "scope",
        "conversation_id",
        "key",
        unique=True,
        sqlite_where=text("archived_at IS NULL AND key <> ''"),
        postgresql_where=text("archived_at IS NULL AND key <> ''"),
    ),
    # A keyed chain by event time: where an out-of-order save belongs.
    Index(
        "ix_memories_key_event",
        "user_id",
        "scope",
        "conversation_id",
        "key",
        "event_at",
        sqlite_where=text("key <> ''"),
        postgresql_where=text("key <> ''"),
    ),
    # The live entries with a given text (exact duplicates).
    Index(
        "ix_memories_live_fingerprint",
        "user_id",
        "fingerprint",
        sqlite_where=text("archived_at IS NULL"),
        postgresql_where=text("archived_at IS NULL"),
    ),
)

# Recall's term statistics (``domain.ranking.TermStats``): per user, how many
# live entries contain each stem; the term "" counts the live entries. Kept by
# ``store.memories.text_index`` in the transaction of every write; a term that
# no live entry contains has no row.
memory_terms = Table(
    "memory_terms",
    metadata,
    _user_id(),
    Column("term", String(MAX_TOKEN_CHARS), nullable=False),
    Column("entries", Integer, nullable=False),
    PrimaryKeyConstraint("user_id", "term"),
)

memory_versions = Table(
    "memory_versions",
    metadata,
    _parent_ref("memory_pk"),
    Column("version", Integer, nullable=False),
    _user_id(),
    Column("text", Text, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("etag", ETAG, nullable=False),
    # When this version was written, and when an update replaced it.
    Column("updated_at", MICROS, nullable=False),
    Column("replaced_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "memory_pk", "version"),
    _parent_fk("memory_pk", "memories"),
)

memory_embeddings = Table(
    "memory_embeddings",
    metadata,
    _parent_ref("memory_pk"),
    _user_id(),
    PrimaryKeyConstraint("user_id", "memory_pk"),
    _parent_fk("memory_pk", "memories"),
    Column("model", MEMORY_KEY, nullable=False),
    Column("dimensions", Integer, nullable=False),
    # float32 little-endian (``domain.vectors.encode_vector``).
    Column("vector", LargeBinary, nullable=False),
    # Computed by the server's embedder (``domain.usecases.embedding_worker``),
    # not sent by a client: a change of the server's model recomputes it; a
    # client's vector is never overwritten by the server's.
    Column("computed", Boolean, nullable=False, server_default=text("false")),
    Index(None, "user_id", "model"),
)

# Entries waiting for the server's embedder: saved (or given new text) without
# a vector on a server that computes them, or found by the backfill of a new
# model. The embedder reads the entry's text when it takes the row, and
# stores the vector only if the entry's version is still the one it read.
embedding_backlog = Table(
    "embedding_backlog",
    metadata,
    _parent_ref("memory_pk"),
    _user_id(),
    # A user's recall waits for that user's entries first.
    PrimaryKeyConstraint("user_id", "memory_pk"),
    _parent_fk("memory_pk", "memories"),
    # The embedder takes the oldest entries waiting, whoever they belong to.
    Index(None, "memory_pk"),
)

# One row per model a server has embedded with (shared by every user): how
# far the backfill of entries without its vector has come (``memories.id``)
# of how far it goes (the last entry when the lease was taken: later ones
# are queued by their saves), and which server process holds the lease to
# embed with it (one at a time, so that replicas do not embed the same
# entries).
embedding_models = Table(
    "embedding_models",
    metadata,
    Column("model", MEMORY_KEY, primary_key=True),
    Column("backfilled_through", BigInteger, nullable=False),
    Column("backfill_until", BigInteger, nullable=False),
    Column("backfill_done", Boolean, nullable=False),
    Column("holder", String(64), nullable=True),
    Column("lease_until", MICROS, nullable=False),
    Column("updated_at", MICROS, nullable=False),
)

memory_tombstones = Table(
    "memory_tombstones",
    metadata,
    _user_id(),
    Column("memory_id", ID, nullable=False),
    Column("key", MEMORY_KEY, nullable=False),
    Column("deleted_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "memory_id"),
    # Sync: the deletions since a time.
    Index(None, "user_id", "deleted_at"),
)

memory_candidates = Table(
    "memory_candidates",
    metadata,
    _user_id(),
    Column("candidate_id", ID, nullable=False),
    # The proposed entry (``MemoryDraft``).
    Column("text", Text, nullable=False),
    Column("key", MEMORY_KEY, nullable=False),
    Column("scope", SHORT_ENUM, nullable=False),
    Column("memory_conversation_id", ID, nullable=False),
    Column("source", SHORT_ENUM, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("embedding_model", MEMORY_KEY, nullable=True),
    Column("embedding", LargeBinary, nullable=True),
    # The entry's event time when its proposer knew it (the message it was
    # found in); NULL: the approval's time.
    Column("event_at", MICROS, nullable=True),
    # Where it stands and where it came from.
    Column("state", SHORT_ENUM, nullable=False),
    Column("conversation_id", ID, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("extractor", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    Column("resolved_at", MICROS, nullable=True),
    Column("saved_memory_id", ID, nullable=False),
    PrimaryKeyConstraint("user_id", "candidate_id"),
    # ListMemoryCandidates: newest first.
    Index(None, "user_id", "created_at", "candidate_id"),
)

# --- governance -------------------------------------------------------------
#
# Consent and the user's memory switch (one row per user who ever set either;
# no row means granted and enabled), and the analytics events. Rows go with
# their user (``ON DELETE CASCADE``). The memory gate reads ``user_settings``
# inside every memory write, after locking the ``users`` row ``FOR SHARE``;
# SetConsent and UpdateMemorySettings lock it ``FOR UPDATE``
# (``store.governance.consent``).

user_settings = Table(
    "user_settings",
    metadata,
    Column("user_id", ID, ForeignKey("users.user_id", ondelete="CASCADE"), primary_key=True),
    # ``domain.governance.ConsentState``; policy_version as the user sent it.
    Column("consent_state", SHORT_ENUM, nullable=False),
    Column("policy_version", ID, nullable=False),
    # NULL: consent never set (granted).
    Column("consent_updated_at", MICROS, nullable=True),
    Column("memory_enabled", Boolean, nullable=False),
    # "" and NULL: the settings were never written.
    Column("settings_etag", ETAG, nullable=False),
    Column("settings_updated_at", MICROS, nullable=True),
)

events = Table(
    "events",
    metadata,
    # The order of recording (keysets break ties of created_at with it).
    _surrogate_id(),
    Column("user_id", ID, ForeignKey("users.user_id", ondelete="CASCADE"), nullable=False),
    # The user's tenant when the event was recorded ("" without one).
    Column("tenant_id", ID, nullable=False),
    Column("event_id", ID, nullable=False),
    Column("type", String(64), nullable=False),
    # A JSON object of strings.
    Column("attributes_json", Text, nullable=False),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "id"),
    UniqueConstraint("user_id", "event_id"),
    # ListEvents / WatchEvents of a user, and of a tenant: newest first.
    Index(None, "user_id", "created_at", "id"),
    Index(None, "tenant_id", "created_at", "id"),
)

# The tenant's audit record of an erasure of a user by someone else
# (``DeleteUserData`` by an admin of the user's tenant, or under ``--auth
# none``; ``store.governance.erasures``, ``ListUserErasures``). No
# ``user_id`` column on purpose: an erasure deletes the user's rows of every
# table that has one, and this record must outlive the user it names
# (``erased_user_id``), whoever erases that user again.
user_erasures = Table(
    "user_erasures",
    metadata,
    # The order of recording (keysets break ties of erased_at with it).
    Column("id", Integer, primary_key=True, autoincrement=True),
    # The erased user's tenant ("" without one).
    Column("tenant_id", ID, nullable=False),
    Column("erased_user_id", ID, nullable=False),
    # The caller's user id ("" under --auth none) and whether it was an admin.
    Column("erased_by", ID, nullable=False),
    Column("by_admin", Boolean, nullable=False),
    Column("erased_at", MICROS, nullable=False),
    # The receipt's rows deleted per table: a JSON object of integers.
    Column("deleted_json", Text, nullable=False),
    # ListUserErasures of a tenant: newest first.
    Index(None, "tenant_id", "erased_at", "id"),
)

# --- the change feed (SyncService) -----------------------------------------
#
# ``changes``: one row per change of a user, in cursor order (``domain.changes``;
# ``store.feed.changes``). ``change_cursors``: the user's newest cursor and the
# time of its newest change; every write that appends changes updates it
# first (the row lock orders the user's changes: commit order is cursor
# order), and neither an erasure nor the pruning of old changes deletes it, so
# a user's cursors only grow. Neither references ``users``: the erasure
# deletes the user but appends an ERASE change, and both outlive it. The feed
# is its user's tenant's: the ``users`` row says which while there is one;
# ``erased_tenant_id`` (set by every erasure) says it while there is none, so
# that another tenant's new user of the same id starts a feed of its own
# (``store.feed.changes``).

change_cursors = Table(
    "change_cursors",
    metadata,
    Column("user_id", ID, primary_key=True),
    Column("last_cursor", BigInteger, nullable=False),
    # Never decreases: the ``created_at`` of the user's changes follow cursor order.
    Column("last_change_at", MICROS, nullable=False),
    # The tenant of the user the last erasure erased ("" without one); NULL:
    # never erased since migration 0015.
    Column("erased_tenant_id", ID, nullable=True),
)

changes = Table(
    "changes",
    metadata,
    Column("user_id", ID, nullable=False),
    Column("cursor", BigInteger, nullable=False),
    # ``domain.changes.ChangeOperation`` value.
    Column("operation", SHORT_ENUM, nullable=False),
    Column("resource_name", Text, nullable=False),
    Column("etag", ETAG, nullable=False),
    # The state's type name and its ``domain.codec`` JSON; NULL: no state (an
    # erasure, or a state a private delete removed).
    Column("state_type", String(32), nullable=True),
    Column("state_json", Text, nullable=True),
    Column("created_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "cursor"),
    # Pruning of changes past the retention.
    Index(None, "created_at"),
)

# --- documents (DocumentService, ``domain.documents``) ---------------------
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
    _surrogate_id(),
    _user_id(),
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
    _user_id(),
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
    _user_id(),
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

memories_fts: TableClause = table("memories_fts", column("rowid", Integer))
"""SQLite only: the FTS5 table over ``memories.search_document`` (queries only)."""

UNMANAGED_NAMES = frozenset({"memories_fts", "ix_memories_search"})
"""Objects migration 0002 creates with raw SQL, which the metadata does not
describe: SQLite's FTS5 virtual table (and its shadow tables
``memories_fts_*``), and PostgreSQL's GIN expression index (Alembic cannot
compare an index on an expression)."""


def include_object_on(dialect: str) -> Callable[[object, str | None, str, bool, object], bool]:
    """Alembic's ``include_object`` hook for a database of ``dialect``: leave
    out of autogenerate comparisons what the metadata creates only on another
    dialect (``ddl_if(dialect=...)``)."""

    def include(obj: object, _name: str | None, _type: str, reflected: bool, _to: object) -> bool:
        condition: DDLIf | None = getattr(obj, "_ddl_if", None)
        return reflected or condition is None or condition.dialect in (None, dialect)

    return include


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Alembic's ``include_name`` hook: leave ``UNMANAGED_NAMES`` out of
    autogenerate comparisons (the FTS5 tables cannot even be reflected)."""
    if name is None:
        return True
    if type_ == "table" and name.startswith("memories_fts"):
        return False
    return name not in UNMANAGED_NAMES


__all__ = [
    "UNMANAGED_NAMES",
    "change_cursors",
    "changes",
    "compaction_checkpoints",
    "conversations",
    "documents",
    "embedding_backlog",
    "embedding_models",
    "events",
    "failed_runs",
    "graph_checkpoint_writes",
    "graph_checkpoints",
    "idempotency_records",
    "include_name",
    "include_object_on",
    "memories",
    "memories_fts",
    "memory_candidates",
    "memory_embeddings",
    "memory_terms",
    "memory_tombstones",
    "memory_user_state",
    "memory_versions",
    "messages",
    "metadata",
    "user_erasures",
    "user_settings",
    "users",
    "working_memory",
]
