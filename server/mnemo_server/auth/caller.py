"""The authenticated caller of the current call.

The auth interceptor (``auth.interceptor``) sets a ``CallScope`` around every
handler (unary and streaming, including the iteration of response streams)
in a ``ContextVar``: that is how a verified identity reaches a servicer,
whose signature gRPC fixes. A servicer reads it once (``current_scope``) and
from there it is an explicit argument: of name parsing (``api.names``) and,
as the ``Caller``, of every command (``domain.commands``). Under ``--auth
none`` nothing is set and the scope is ``None``: there is no identity, so no
isolation either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field

from mnemo_server.domain.identity import Caller

__all__ = ["CallScope", "Caller", "caller_of", "calling_as", "current_scope", "enter", "leave"]


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


def caller_of(scope: CallScope | None) -> Caller | None:
    """The caller of ``scope``; ``None`` under ``--auth none``."""
    return None if scope is None else scope.caller


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
