"""Long-term memory (gecx-chat): entries, their versions, vectors, term
statistics, tombstones and candidates.

Entries are append-only rows: a save inserts; a keyed save archives
(``archived_at``) the live entry of the same (user, scope, conversation, key);
an update moves the previous text to ``memory_versions``. Memory writes of a
user lock that user's ``memory_user_state`` row first (PostgreSQL; SQLite has
one writer anyway), so keyed saves of one user are serialized; the partial
unique index below is the database's own guarantee of one live entry per key.

Full text (``store.memories.text_index``): ``search_document`` holds the stems
of ``text``, each prefixed with the entry's visibility key. SQLite indexes it
in the contentless FTS5 table ``memories_fts``
(rowid = ``memories.id``; it holds exactly the unarchived entries, kept in
sync by the store in the writing transaction); PostgreSQL in the partial GIN
index ``ix_memories_search`` on
``array_to_tsvector(string_to_array(search_document, ' '))``. Both are
created by raw SQL in migrations only (see ``UNMANAGED_NAMES``)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from mnemo_server.domain.text_search import MAX_TOKEN_CHARS
from mnemo_server.store.schema.columns import (
    ETAG,
    ID,
    MICROS,
    SHORT_ENUM,
    metadata,
    parent_fk,
    parent_key,
    parent_ref,
    surrogate_id_column,
    user_id_column,
)

# Memory keys and embedding model names.
MEMORY_KEY = String(256)

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
    surrogate_id_column(),
    user_id_column(),
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
    parent_key("memories"),
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
    user_id_column(),
    Column("term", String(MAX_TOKEN_CHARS), nullable=False),
    Column("entries", Integer, nullable=False),
    PrimaryKeyConstraint("user_id", "term"),
)

memory_versions = Table(
    "memory_versions",
    metadata,
    parent_ref("memory_pk"),
    Column("version", Integer, nullable=False),
    user_id_column(),
    Column("text", Text, nullable=False),
    Column("metadata_json", Text, nullable=False),
    Column("pinned", Boolean, nullable=False),
    Column("etag", ETAG, nullable=False),
    # When this version was written, and when an update replaced it.
    Column("updated_at", MICROS, nullable=False),
    Column("replaced_at", MICROS, nullable=False),
    PrimaryKeyConstraint("user_id", "memory_pk", "version"),
    parent_fk("memory_pk", "memories"),
)

memory_embeddings = Table(
    "memory_embeddings",
    metadata,
    parent_ref("memory_pk"),
    user_id_column(),
    PrimaryKeyConstraint("user_id", "memory_pk"),
    parent_fk("memory_pk", "memories"),
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
    parent_ref("memory_pk"),
    user_id_column(),
    # A user's recall waits for that user's entries first.
    PrimaryKeyConstraint("user_id", "memory_pk"),
    parent_fk("memory_pk", "memories"),
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
    user_id_column(),
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
    user_id_column(),
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
