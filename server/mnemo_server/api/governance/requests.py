"""GovernanceService requests -> validated domain values, at the edge.

Names: ``users/{user}/consent``, ``users/{user}/memorySettings``; the
parent of events is ``users/{user}`` or ``tenants/{tenant}``, where the
tenant is a tenant id or ``-`` for users without a tenant.

A tenant's events, and its audit records of erasures (``ListUserErasures``,
whose parent is ``tenants/{tenant}`` alone), need a caller with the admin
role of that very tenant (``--auth jwt``); anything else is
``PERMISSION_DENIED``. Under ``--auth
none`` there is no identity: tenant listings are allowed only when the
server listens on loopback (where every user's data is open to the caller
anyway), and refused behind a non-loopback address, where an authenticating
proxy in front could not know to guard this kind of name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo_server.api import names
from mnemo_server.api.governance.convert import CONSENT_STATES, EVENT_TYPES
from mnemo_server.api.validation import Validator
from mnemo_server.auth.caller import CallScope, caller_of
from mnemo_server.domain.errors import PermissionDenied
from mnemo_server.domain.governance import ConsentState, EventScope, EventType

CONSENT_PATTERN = "users/{user}/consent"
SETTINGS_PATTERN = "users/{user}/memorySettings"
EVENTS_PARENT_PATTERN = "users/{user} or tenants/{tenant}"
TENANT_PATTERN = "tenants/{tenant}"
NO_TENANT = "-"
"""The tenant segment naming users without a tenant."""

_CONSENT = re.compile(rf"users/({names.ID_PATTERN})/consent")
_SETTINGS = re.compile(rf"users/({names.ID_PATTERN})/memorySettings")
_TENANT = re.compile(rf"tenants/({names.ID_PATTERN}|-)")


def consent_user(value: str, field: str, scope: CallScope | None) -> str:
    """``users/{user}/consent`` -> the user id. Raises ``INVALID_NAME``, ``NotFound``."""
    return names.owned_ids(value, field, _CONSENT, CONSENT_PATTERN, scope)[0]


def settings_user(value: str, field: str, scope: CallScope | None) -> str:
    """``users/{user}/memorySettings`` -> the user id."""
    return names.owned_ids(value, field, _SETTINGS, SETTINGS_PATTERN, scope)[0]


def consent_state_of(v: Validator, value: int, field: str) -> ConsentState:
    """GRANTED or WITHDRAWN; anything else is ``INVALID_FIELD``."""
    for state, number in CONSENT_STATES.items():
        if number == value:
            return state
    v.invalid(field, "must be CONSENT_STATE_GRANTED or CONSENT_STATE_WITHDRAWN")
    return ConsentState.GRANTED


def event_types_of(
    v: Validator, values: Sequence[int], field: str = "types"
) -> frozenset[EventType]:
    """The filter of event types; empty means every type."""
    found: set[EventType] = set()
    by_number: dict[int, EventType] = {int(n): kind for kind, n in EVENT_TYPES.items()}
    for index, value in enumerate(values):
        kind = by_number.get(value)
        if kind is None:
            v.invalid(f"{field}[{index}]", f"unknown or unspecified event type {value}")
        else:
            found.add(kind)
    return frozenset(found)


def types_binding(types: frozenset[EventType]) -> str:
    """The filter as part of a page token's binding (order-independent)."""
    return ",".join(sorted(t.value for t in types))


def _check_tenant_access(
    tenant_id: str, scope: CallScope | None, *, loopback: bool, what: str = "events"
) -> None:
    caller = caller_of(scope)
    if caller is None:
        if not loopback:
            raise PermissionDenied(
                f"tenant {what} need an authenticated admin (--auth jwt); without "
                "authentication they are served on a loopback address only",
                reason="PERMISSION_DENIED",
            )
        return
    if not caller.admin or caller.tenant_id != tenant_id:
        raise PermissionDenied(
            f"only an admin of the tenant may read its {what}",
            metadata={"role": "admin"},
            reason="PERMISSION_DENIED",
        )


def event_scope(value: str, field: str, scope: CallScope | None, *, loopback: bool) -> EventScope:
    """Whose events ``value`` names. Raises ``INVALID_NAME``, ``NotFound``
    (another user's name, as anywhere) or ``PermissionDenied`` (a tenant the
    caller may not read; see the module doc)."""
    match = _TENANT.fullmatch(value)
    if match is None:
        if not value.startswith("users/"):
            raise names.invalid_name(value, field, EVENTS_PARENT_PATTERN)
        return EventScope(user_id=names.parse_user(value, field, scope))
    tenant_id = "" if match.group(1) == NO_TENANT else match.group(1)
    _check_tenant_access(tenant_id, scope, loopback=loopback)
    return EventScope(tenant_id=tenant_id)


def erasures_tenant(value: str, field: str, scope: CallScope | None, *, loopback: bool) -> str:
    """The tenant id ``tenants/{tenant}`` names (``""`` for ``tenants/-``),
    once the caller may read its audit records of erasures. Raises
    ``INVALID_NAME`` or ``PermissionDenied`` (see the module doc)."""
    match = _TENANT.fullmatch(value)
    if match is None:
        raise names.invalid_name(value, field, TENANT_PATTERN)
    tenant_id = "" if match.group(1) == NO_TENANT else match.group(1)
    _check_tenant_access(tenant_id, scope, loopback=loopback, what="erasure records")
    return tenant_id
