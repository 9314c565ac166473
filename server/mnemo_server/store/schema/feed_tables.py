"""The change feed (SyncService).

``changes``: one row per change of a user, in cursor order (``domain.changes``;
``store.feed.changes``). ``change_cursors``: the user's newest cursor and the
time of its newest change; every write that appends changes updates it
first (the row lock orders the user's changes: commit order is cursor
order), and neither an erasure nor the pruning of old changes deletes it, so
a user's cursors only grow. Neither references ``users``: the erasure
deletes the user but appends an ERASE change, and both outlive it. The feed
is its user's tenant's: the ``users`` row says which while there is one;
``erased_tenant_id`` (set by every erasure) says it while there is none, so
that another tenant's new user of the same id starts a feed of its own
(``store.feed.changes``)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, PrimaryKeyConstraint, String, Table, Text

from mnemo_server.store.schema.columns import ETAG, ID, MICROS, SHORT_ENUM, metadata

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
