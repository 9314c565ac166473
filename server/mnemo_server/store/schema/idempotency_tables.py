"""Request ids (``store.transactions.idempotency``): the result of a request's
first call, replayed to a retry of the same request id."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, PrimaryKeyConstraint, String, Table, Text

from mnemo_server.store.schema.columns import ID, MICROS, metadata, user_id_column

idempotency_records = Table(
    "idempotency_records",
    metadata,
    user_id_column(),
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
