"""The authenticated caller of the current call, in a ``ContextVar``.

The auth interceptor (``auth.interceptor``) sets a ``CallScope`` around every
handler: unary and streaming, including the iteration of response streams.
Under ``--auth none`` nothing is set and ``current_caller()`` is ``None``:
there is no identity, so no isolation either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Caller:
    """Who a verified credential says is calling.

    ``user_id`` is the token's ``sub``; ``tenant_id`` its tenant claim (``""``
    without one); ``admin`` whether it carries the admin role, which lets it act
    for any user of its own tenant.
    """

    user_id: str
    tenant_id: str = ""
    admin: bool = False


@dataclass(frozen=True)
class CallScope:
    """One call's caller and what the call learned about the users it names.

    ``tenants`` maps each user id the interceptor looked up to that user's
    tenant, or ``None`` when no such user exists yet. A user id the call names
    but that was not looked up is refused (``auth.access``).
    """

    caller: Caller
    tenants: dict[str, str | None] = field(default_factory=dict)


_SCOPE: ContextVar[CallScope | None] = ContextVar("mnemo_call_scope", default=None)


def current_scope() -> CallScope | None:
    """The current call's scope; ``None`` outside an authenticated call."""
    return _SCOPE.get()


def current_caller() -> Caller | None:
    """The current call's caller; ``None`` under ``--auth none``."""
    scope = _SCOPE.get()
    return None if scope is None else scope.caller


def tenant_of_new_users() -> str:
    """The tenant a user created implicitly by this call belongs to."""
    caller = current_caller()
    return "" if caller is None else caller.tenant_id


def enter(scope: CallScope | None) -> Token[CallScope | None]:
    """Make ``scope`` current; ``leave`` with the token restores the previous one."""
    return _SCOPE.set(scope)


def leave(token: Token[CallScope | None]) -> None:
    """Restore the scope before ``enter``. From another context (a response
    stream finalized by the garbage collector) there is nothing to restore:
    that context was the call's own and ends with it."""
    with contextlib.suppress(ValueError):
        _SCOPE.reset(token)


@contextmanager
def calling_as(scope: CallScope | None) -> Iterator[None]:
    """Run the block as ``scope`` (restored afterwards)."""
    token = enter(scope)
    try:
        yield
    finally:
        leave(token)
