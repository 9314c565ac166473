"""Governance: consent and the user's memory switch (one row per user who ever
set either; no row means granted and enabled), and the analytics events. Rows
go with their user (``ON DELETE CASCADE``). The memory gate reads ``user_settings``
inside every memory write, after locking the ``users`` row ``FOR SHARE``;
SetConsent and UpdateMemorySettings lock it ``FOR UPDATE``
(``store.governance.consent``).

And the tenant's audit record of erasures (``user_erasures``)."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
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
    SHORT_ENUM,
    metadata,
    surrogate_id_column,
)

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
    surrogate_id_column(),
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
