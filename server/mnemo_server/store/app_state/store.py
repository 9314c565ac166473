"""``SqlAppStateStore``: app states in ``app_states``, keyed by ``(tenant_id, app_id)``.

The table has no ``user_id``: an app's state is the tenant's, not a user's
(sharded by user, it is a reference table; ``docs/operations.md``). A write
makes sure the row exists (``INSERT ... ON CONFLICT DO NOTHING``), then
reads it ``FOR UPDATE`` (PostgreSQL; SQLite's writer is alone anyway), so
concurrent merges apply one after the other and none is lost.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, select, update

from mnemo_server.domain.app_state import (
    MAX_STATE_BYTES,
    AppState,
    app_state_name,
    encode_state,
    state_too_large,
)
from mnemo_server.domain.errors import etag_mismatch
from mnemo_server.store.engine.dialect import insert_ignoring_conflicts, locked_for_update
from mnemo_server.store.rows import new_etag, now_micros, to_datetime
from mnemo_server.store.schema import app_states
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.transactions.tx import Tx

__all__ = ["SqlAppStateStore"]

_a = app_states.c


def _state(tenant_id: str, app_id: str, row: Any) -> AppState:
    if row is None or not row.etag:
        return AppState(tenant_id=tenant_id, app_id=app_id, state_json="{}")
    return AppState(
        tenant_id=tenant_id,
        app_id=app_id,
        state_json=row.state_json,
        etag=row.etag,
        update_time=to_datetime(row.updated_at),
    )


def _get(conn: Connection, tenant_id: str, app_id: str) -> AppState:
    row = conn.execute(
        select(_a.state_json, _a.etag, _a.updated_at).where(
            _a.tenant_id == tenant_id, _a.app_id == app_id
        )
    ).first()
    return _state(tenant_id, app_id, row)


def _update(
    tx: Tx, tenant_id: str, app_id: str, delta: dict[str, Any], expected_etag: str | None
) -> AppState:
    conn = tx.conn
    now = now_micros()
    conn.execute(
        insert_ignoring_conflicts(conn, app_states).values(
            tenant_id=tenant_id, app_id=app_id, state_json="{}", etag="", updated_at=now
        )
    )
    statement = locked_for_update(
        tx.dialect,
        select(_a.state_json, _a.etag, _a.updated_at).where(
            _a.tenant_id == tenant_id, _a.app_id == app_id
        ),
    )
    row = conn.execute(statement).one()
    if expected_etag is not None and expected_etag != row.etag:
        raise etag_mismatch(app_state_name(app_id))
    state = json.loads(row.state_json)
    state.update(delta)
    state_json = encode_state(state)
    size = len(state_json.encode("utf-8", "surrogatepass"))
    if size > MAX_STATE_BYTES:
        raise state_too_large(size)
    etag = new_etag()
    conn.execute(
        update(app_states)
        .where(_a.tenant_id == tenant_id, _a.app_id == app_id)
        .values(state_json=state_json, etag=etag, updated_at=now)
    )
    return AppState(
        tenant_id=tenant_id,
        app_id=app_id,
        state_json=state_json,
        etag=etag,
        update_time=to_datetime(now),
    )


class SqlAppStateStore:
    """Implements ``domain.app_state.AppStateStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_app_state(self, tenant_id: str, app_id: str) -> AppState:
        return await self._db.read(lambda conn: _get(conn, tenant_id, app_id), short=True)

    async def update_app_state(
        self, tenant_id: str, app_id: str, delta: dict[str, Any], expected_etag: str | None
    ) -> AppState:
        weight = len(encode_state(delta))
        written, _ = await self._db.write(
            lambda tx: _update(tx, tenant_id, app_id, delta, expected_etag), weight=weight
        )
        return written
