"""The relational schema (SQLAlchemy Core). Alembic migrations create it; this
package describes it for queries and for the test that compares the two, one
module per area, all on the one ``metadata`` of ``columns``:

- ``columns``: the ``MetaData``, the column types and the shared columns and keys;
- ``user_tables``: ``users``;
- ``conversation_tables``: conversations, messages, failed runs, compaction
  checkpoints, working memory;
- ``idempotency_tables``: request ids;
- ``memory_tables``: long-term memory (entries, versions, vectors, backlog,
  models, tombstones, candidates, term statistics);
- ``governance_tables``: consent and settings, events, the erasure audit;
- ``feed_tables``: the change feed;
- ``agent_state_tables``: what agent frameworks keep (documents, graph
  checkpoints, app states);
- ``autogenerate``: what Alembic's comparison leaves out (``UNMANAGED_NAMES``,
  ``memories_fts``, the ``include_*`` hooks).

Import every name from this package (``from mnemo_server.store.schema import
...``), not from its modules. The modules are imported below in the order the
tables were first defined, so that the tables of ``metadata`` keep that order
(and with it the order in which ``create_all`` creates tables that do not
depend on each other): keep it so when adding a table (``isort: skip_file``).

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

# isort: skip_file
# The order of these imports is the order of the tables in ``metadata``.

from __future__ import annotations

from mnemo_server.store.schema.columns import (
    ETAG,
    ID,
    MICROS,
    NAMING_CONVENTION,
    SHORT_ENUM,
    SURROGATE_ID,
    metadata,
)
from mnemo_server.store.schema.user_tables import users
from mnemo_server.store.schema.conversation_tables import (
    conversations,
    messages,
    failed_runs,
    compaction_checkpoints,
    working_memory,
)
from mnemo_server.store.schema.idempotency_tables import idempotency_records
from mnemo_server.store.schema.memory_tables import (
    MEMORY_KEY,
    memory_user_state,
    memories,
    memory_terms,
    memory_versions,
    memory_embeddings,
    embedding_backlog,
    embedding_models,
    memory_tombstones,
    memory_candidates,
)
from mnemo_server.store.schema.governance_tables import user_settings, events, user_erasures
from mnemo_server.store.schema.feed_tables import change_cursors, changes
from mnemo_server.store.schema.agent_state_tables import (
    documents,
    graph_checkpoints,
    graph_checkpoint_writes,
    app_states,
)
from mnemo_server.store.schema.autogenerate import (
    UNMANAGED_NAMES,
    include_name,
    include_object_on,
    memories_fts,
)

__all__ = [
    "ETAG",
    "ID",
    "MEMORY_KEY",
    "MICROS",
    "NAMING_CONVENTION",
    "SHORT_ENUM",
    "SURROGATE_ID",
    "UNMANAGED_NAMES",
    "app_states",
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
