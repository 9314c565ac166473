"""The audit records of erasures (``user_erasures``): written by the
erasure's own unit of work (``store.user_data.erase``), in its transaction,
and the newest-first listing of a tenant's (``ListUserErasures``).

Who gets a record is the domain's policy (``domain.user_data.audits_erasure``).
The table has no ``user_id`` column, so no erasure reaches it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Row, insert, select

from mnemo_server.domain.identity import Caller
from mnemo_server.domain.models import Keyset, Page
from mnemo_server.domain.user_data import UserErasure
from mnemo_server.store import paging
from mnemo_server.store.rows import now_micros, to_datetime
from mnemo_server.store.schema import user_erasures

__all__ = ["list_page", "record"]


def record(
    conn: Connection,
    caller: Caller | None,
    user_id: str,
    tenant_id: str,
    deleted: Mapping[str, int],
) -> None:
    """Record that ``caller`` (``None``: ``--auth none``) erased ``user_id``
    of ``tenant_id``, deleting ``deleted`` rows per table. One statement."""
    conn.execute(
        insert(user_erasures).values(
            tenant_id=tenant_id,
            erased_user_id=user_id,
            erased_by="" if caller is None else caller.user_id,
            by_admin=caller is not None and caller.admin,
            erased_at=now_micros(),
            deleted_json=json.dumps(dict(deleted), sort_keys=True, separators=(",", ":")),
        )
    )


def _erasure(row: Row[Any]) -> UserErasure:
    return UserErasure(
        tenant_id=row.tenant_id,
        erased_user_id=row.erased_user_id,
        erased_by=row.erased_by,
        by_admin=bool(row.by_admin),
        erase_time=to_datetime(row.erased_at),
        deleted_rows=json.loads(row.deleted_json),
        sequence=row.id,
    )


def list_page(
    conn: Connection, tenant_id: str, limit: int, after: Keyset | None
) -> Page[UserErasure]:
    """The records of ``tenant_id``'s users, newest first; keyset
    ``(erased_at micros, sequence)``."""
    statement = paging.newest_first(
        select(user_erasures).where(user_erasures.c.tenant_id == tenant_id),
        (user_erasures.c.erased_at, user_erasures.c.id),
        paging.typed(after, (int, int)),
        limit,
    )
    return paging.read_page(conn, statement, limit, _erasure, lambda row: (row.erased_at, row.id))
