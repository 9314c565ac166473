"""Governance calls (``mnemo.v1.GovernanceService``): consent, the user's
memory switch, and the analytics events of memory operations.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from mnemo.client._calls import Page, PagedCall, Rpc, StreamCall, UnaryCall
from mnemo.client._memories import choice
from mnemo.client._names import user_name
from mnemo.client.errors import FieldViolation, InvalidArgumentError
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1.governance_pb2_grpc import GovernanceServiceStub

#: Whether the user consents to memory.
ConsentStateName = Literal["granted", "withdrawn"]
#: An analytics event type, as the gecx-chat SDK names it.
EventTypeName = Literal[
    "memory_saved",
    "memory_deleted",
    "memory_cleared",
    "memory_recalled",
    "memory_extraction_proposed",
    "memory_extraction_resolved",
    "memory_consent_changed",
]

_CONSENT_STATES: dict[str, gv.ConsentState] = {
    "granted": gv.CONSENT_STATE_GRANTED,
    "withdrawn": gv.CONSENT_STATE_WITHDRAWN,
}
EVENT_TYPES: dict[str, gv.EventType] = {
    "memory_saved": gv.EVENT_TYPE_MEMORY_SAVED,
    "memory_deleted": gv.EVENT_TYPE_MEMORY_DELETED,
    "memory_cleared": gv.EVENT_TYPE_MEMORY_CLEARED,
    "memory_recalled": gv.EVENT_TYPE_MEMORY_RECALLED,
    "memory_extraction_proposed": gv.EVENT_TYPE_MEMORY_EXTRACTION_PROPOSED,
    "memory_extraction_resolved": gv.EVENT_TYPE_MEMORY_EXTRACTION_RESOLVED,
    "memory_consent_changed": gv.EVENT_TYPE_MEMORY_CONSENT_CHANGED,
}


def rpc(method: str) -> Rpc:
    """The ``GovernanceService`` RPC named ``method``."""
    return Rpc(GovernanceServiceStub, method)


def events_parent(user: str | None, tenant: str | None) -> str:
    """``users/{user}`` or ``tenants/{tenant}`` (``""``: users without a tenant)."""
    if (user is None) == (tenant is None):
        raise InvalidArgumentError(
            "give exactly one of user and tenant",
            reason="INVALID_NAME",
            metadata={"field": "parent"},
            field_violations=[FieldViolation("parent", "one of user and tenant")],
        )
    if user is not None:
        return user_name(user)
    assert tenant is not None
    return f"tenants/{tenant or '-'}"


def _types(types: Iterable[EventTypeName]) -> list[gv.EventType]:
    return [choice(EVENT_TYPES, name, "types") for name in types]


def _consent(response: gv.GetConsentResponse) -> gv.Consent:
    return response.consent


def _settings(response: gv.GetMemorySettingsResponse) -> gv.MemorySettings:
    return response.memory_settings


def _events_page(response: gv.ListEventsResponse) -> Page[gv.Event]:
    return Page(list(response.events), response.next_page_token)


def _event(response: gv.WatchEventsResponse) -> list[gv.Event]:
    return [response.event]


def get_consent(
    user: str, *, timeout: float | None = None
) -> UnaryCall[gv.GetConsentRequest, gv.Consent]:
    """The user's consent to memory: ``state`` (granted for a user who never
    set it), ``policy_version`` and ``update_time``.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
    """
    request = gv.GetConsentRequest(name=f"{user_name(user)}/consent")
    return UnaryCall(rpc("GetConsent"), request, _consent, timeout)


def set_consent(
    user: str,
    state: ConsentStateName,
    *,
    policy_version: str = "",
    timeout: float | None = None,
) -> UnaryCall[gv.SetConsentRequest, gv.SetConsentResponse]:
    """Grant or withdraw consent to memory; returns the stored ``consent`` and
    how many pending candidates a withdrawal ``cancelled_candidates``.

    While consent is withdrawn every memory save, update, delete, extraction
    and proposal fails with ``FailedPreconditionError`` (reason
    ``MEMORY_CONSENT_WITHDRAWN``) and recall and inject return nothing;
    existing entries stay. Setting the stored value again changes nothing.

    Raises:
        InvalidArgumentError: a malformed id, an unknown state or a policy
            version over 128 characters (``INVALID_NAME``, ``INVALID_FIELD``).
    """
    request = gv.SetConsentRequest(
        consent=gv.Consent(
            name=f"{user_name(user)}/consent",
            state=choice(_CONSENT_STATES, state, "state"),
            policy_version=policy_version,
        )
    )
    return UnaryCall(rpc("SetConsent"), request, lambda response: response, timeout)


def get_memory_settings(
    user: str, *, timeout: float | None = None
) -> UnaryCall[gv.GetMemorySettingsRequest, gv.MemorySettings]:
    """The user's memory settings: ``enabled`` (true for a user who never set
    it) and ``etag``.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
    """
    request = gv.GetMemorySettingsRequest(name=f"{user_name(user)}/memorySettings")
    return UnaryCall(rpc("GetMemorySettings"), request, _settings, timeout)


def update_memory_settings(
    user: str, *, enabled: bool, etag: str = "", timeout: float | None = None
) -> UnaryCall[gv.UpdateMemorySettingsRequest, gv.MemorySettings]:
    """Switch the user's memory on or off; with an ``etag``, only if it is
    still current. Returns the stored settings.

    Off means no reads, no writes, no extraction (``FailedPreconditionError``,
    reason ``MEMORY_DISABLED``) and empty recall and inject; entries stay.
    Switching memory on never lifts a withdrawn consent.

    Raises:
        InvalidArgumentError: a malformed id (``INVALID_NAME``).
        EtagMismatchError: ``etag`` is no longer current (``ABORTED``).
    """
    request = gv.UpdateMemorySettingsRequest(
        memory_settings=gv.MemorySettings(
            name=f"{user_name(user)}/memorySettings", enabled=enabled, etag=etag
        )
    )
    return UnaryCall(rpc("UpdateMemorySettings"), request, _settings, timeout)


def list_events_page(
    user: str | None = None,
    *,
    tenant: str | None = None,
    types: Iterable[EventTypeName] = (),
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[gv.ListEventsRequest, Page[gv.Event]]:
    """One page of analytics events, newest first: ``(items, next_page_token)``.

    Events of one ``user``, or of a whole ``tenant`` (``""``: the users
    without a tenant), which needs an admin of that tenant. ``types`` filters
    (``"memory_saved"``, ...; none means every type).

    Raises:
        InvalidArgumentError: a malformed id, an unknown type, a negative size,
            a page token of another listing or filter (``INVALID_NAME``,
            ``INVALID_FIELD``, ``INVALID_PAGE_TOKEN``).
        PermissionDeniedError: a tenant the caller may not read.
    """
    request = gv.ListEventsRequest(
        parent=events_parent(user, tenant),
        types=_types(types),
        page_size=page_size,
        page_token=page_token,
    )
    return UnaryCall(rpc("ListEvents"), request, _events_page, timeout)


def list_events(
    user: str | None = None,
    *,
    tenant: str | None = None,
    types: Iterable[EventTypeName] = (),
    page_size: int = 0,
    timeout: float | None = None,
) -> PagedCall[gv.Event]:
    """Iterate over analytics events, newest first, page by page (see
    ``list_events_page`` for the arguments).

    Raises:
        InvalidArgumentError: a malformed id, an unknown type or a negative size.
        PermissionDeniedError: a tenant the caller may not read.
    """
    chosen = tuple(types)
    return PagedCall(
        lambda token: list_events_page(
            user,
            tenant=tenant,
            types=chosen,
            page_size=page_size,
            page_token=token,
            timeout=timeout,
        )
    )


def _erasures_page(response: gv.ListUserErasuresResponse) -> Page[gv.UserErasure]:
    return Page(list(response.erasures), response.next_page_token)


def list_user_erasures_page(
    tenant: str,
    *,
    page_size: int = 0,
    page_token: str = "",
    timeout: float | None = None,
) -> UnaryCall[gv.ListUserErasuresRequest, Page[gv.UserErasure]]:
    """One page of the audit records of the erasures of a ``tenant``'s users
    (``""``: the users without a tenant) made by an admin or an operator,
    newest first: ``(items, next_page_token)``. Needs an admin of that tenant.

    Raises:
        InvalidArgumentError: a malformed tenant id, a negative size, a page
            token of another listing (``INVALID_NAME``, ``INVALID_FIELD``,
            ``INVALID_PAGE_TOKEN``).
        PermissionDeniedError: a tenant the caller may not read.
    """
    request = gv.ListUserErasuresRequest(
        parent=events_parent(None, tenant), page_size=page_size, page_token=page_token
    )
    return UnaryCall(rpc("ListUserErasures"), request, _erasures_page, timeout)


def list_user_erasures(
    tenant: str, *, page_size: int = 0, timeout: float | None = None
) -> PagedCall[gv.UserErasure]:
    """Iterate over ``list_user_erasures_page``'s records, page by page.

    Raises:
        InvalidArgumentError: a malformed tenant id or a negative size.
        PermissionDeniedError: a tenant the caller may not read.
    """
    return PagedCall(
        lambda token: list_user_erasures_page(
            tenant, page_size=page_size, page_token=token, timeout=timeout
        )
    )


def watch_events(
    user: str | None = None,
    *,
    tenant: str | None = None,
    types: Iterable[EventTypeName] = (),
    timeout: float | None = None,
) -> StreamCall[gv.WatchEventsRequest, gv.Event]:
    """Iterate over analytics events as they are recorded, from now on, until
    the server shuts down (the iteration then ends) or the caller stops
    iterating. Events of one ``user`` or a ``tenant``, as for
    ``list_events``. ``timeout`` (by default the client's) bounds the whole
    stream: pass a long one for a long watch.

    Raises:
        InvalidArgumentError: a malformed id or an unknown type.
        PermissionDeniedError: a tenant the caller may not read.
        ResourceExhaustedError: the server runs as many watches as it allows.
        DeadlineExceededError: ``timeout`` passed.
    """
    request = gv.WatchEventsRequest(parent=events_parent(user, tenant), types=_types(types))
    return StreamCall(rpc("WatchEvents"), request, _event, timeout)
