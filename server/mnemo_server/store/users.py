"""User rows: implicit creation in the caller's tenant, and tenant look-ups.

A user exists from its first write. ``ensure_user`` creates it in the tenant
of the authenticated caller (``domain.identity.tenant_of_new_users``; ``""``
under ``--auth none``) and, inside the same write transaction, refuses a user
of another tenant with the same ``NotFound`` the API gives for a name the
caller may not use. Every write that creates a conversation and every memory
write calls it, so two tenants' first writes for the same new user id, racing
past the look-up ``auth.access`` made before the call, cannot both create
data; a user's tenant never changes while the user exists, so other writes
rely on that look-up.

A user id may be taken again after ``DeleteUserData`` erased its user, by
another tenant too: creating the user starts its change feed afresh unless
the erased user was of the same tenant (``store.feed.changes``, "Whose feed").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlalchemy import Connection, bindparam, select

from mnemo_server.domain.errors import not_found
from mnemo_server.domain.identity import Caller, tenant_of_new_users
from mnemo_server.domain.names import user_name
from mnemo_server.store.engine.statements import Statement, insert_per_dialect
from mnemo_server.store.feed import changes as change_log
from mnemo_server.store.schema import users
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.transactions.tx import Tx

_CREATE = insert_per_dialect(
    lambda insert: (
        insert(users)
        .values(
            user_id=bindparam("user_id"),
            tenant_id=bindparam("tenant_id"),
            created_at=bindparam("now"),
        )
        .on_conflict_do_nothing()
    )
)
_TENANT = Statement(select(users.c.tenant_id).where(users.c.user_id == bindparam("user_id")))


def ensure_user(tx: Tx, caller: Caller | None, user_id: str, now: int) -> None:
    """Create the user if needed (and, if created, its change feed afresh
    when an erased user of another tenant left one: module doc). Raises
    ``NotFound`` if it belongs to another tenant than the authenticated
    ``caller``'s."""
    tenant_id = tenant_of_new_users(caller)
    if _CREATE[tx.dialect].execute(tx, user_id=user_id, tenant_id=tenant_id, now=now):
        change_log.start_for_new_user(tx, user_id, tenant_id)
    if caller is None:
        return
    check_tenant(caller, user_id, _TENANT.scalar(tx, user_id=user_id))


def check_tenant(caller: Caller | None, user_id: str, stored_tenant: str | None) -> None:
    """Raise ``NotFound`` for the user unless ``caller`` may write to a user
    of ``stored_tenant`` (``None``: the user does not exist)."""
    if caller is not None and stored_tenant is not None and stored_tenant != caller.tenant_id:
        raise not_found(user_name(user_id))


def tenants_of(conn: Connection, user_ids: Collection[str]) -> dict[str, str]:
    """The tenant of each existing user among ``user_ids``."""
    if not user_ids:
        return {}
    query = select(users.c.user_id, users.c.tenant_id).where(users.c.user_id.in_(list(user_ids)))
    return {row.user_id: row.tenant_id for row in conn.execute(query)}


class SqlUserStore:
    """Implements ``UserStore`` over ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def tenants_of(self, user_ids: Collection[str]) -> Mapping[str, str]:
        return await self._db.read(lambda conn: tenants_of(conn, user_ids), short=True)
