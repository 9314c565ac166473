"""The users: one row per user id, with the user's tenant."""

from __future__ import annotations

from sqlalchemy import Column, Table

from mnemo_server.store.schema.columns import ID, MICROS, metadata

users = Table(
    "users",
    metadata,
    Column("user_id", ID, primary_key=True),
    Column("tenant_id", ID, nullable=False, server_default=""),
    Column("created_at", MICROS, nullable=False),
)
