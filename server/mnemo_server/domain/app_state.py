"""App state: the JSON object an agent framework shares across an app's users
(Google ADK's ``app:`` state, ``AgentStateService``).

A tenant-level resource ``apps/{app}/state``: keyed by ``(tenant, app)``,
never by user, so it is no user's data (user export, import, erasure and the
change feed leave it alone). Every caller of the tenant reads it; only an
admin of the tenant writes it; under ``--auth none`` (no caller) anyone does,
in the default tenant ``""``. A write merges a delta (``dict.update``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemo_server.domain.errors import FieldViolation, InvalidArgument, PermissionDenied
from mnemo_server.domain.identity import Caller

__all__ = [
    "MAX_STATE_BYTES",
    "AppState",
    "AppStateStore",
    "AppStates",
    "app_state_name",
    "encode_state",
    "state_too_large",
]

MAX_STATE_BYTES = 1_048_576
"""The most an app's state may hold, encoded (UTF-8 JSON)."""


def app_state_name(app_id: str) -> str:
    """``apps/{app}/state``."""
    return f"apps/{app_id}/state"


def encode_state(state: dict[str, Any]) -> str:
    """The stored form of a state: compact JSON, keys in the order given."""
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def state_too_large(actual: int) -> InvalidArgument:
    """``FIELD_TOO_LARGE`` for ``delta_json``: the merged state would hold ``actual`` bytes."""
    field = "delta_json"
    return InvalidArgument(
        f"{field} makes the state too large: {actual} bytes, at most {MAX_STATE_BYTES}",
        reason="FIELD_TOO_LARGE",
        metadata={"field": field, "limit": str(MAX_STATE_BYTES)},
        violations=(FieldViolation(field, f"the state after it at most {MAX_STATE_BYTES} bytes"),),
    )


@dataclass(frozen=True, slots=True)
class AppState:
    """An app's state; ``etag`` ``""`` and ``update_time`` ``None`` when never written."""

    tenant_id: str
    app_id: str
    state_json: str
    etag: str = ""
    update_time: datetime | None = None


class AppStateStore(Protocol):
    """Where app states live (``store.app_state``)."""

    async def get_app_state(self, tenant_id: str, app_id: str) -> AppState:
        """The app's state (an empty one when never written)."""
        ...

    async def update_app_state(
        self, tenant_id: str, app_id: str, delta: dict[str, Any], expected_etag: str | None
    ) -> AppState:
        """Merge ``delta`` in one transaction; the state after it. Raises
        ``Aborted(ETAG_MISMATCH)`` and ``InvalidArgument(FIELD_TOO_LARGE)``."""
        ...


def tenant_of(caller: Caller | None) -> str:
    """The tenant whose apps ``caller`` sees (``""`` under ``--auth none``)."""
    return "" if caller is None else caller.tenant_id


class AppStates:
    """The reads and writes of app states, with who may do which."""

    def __init__(self, store: AppStateStore) -> None:
        self._store = store

    async def get(self, caller: Caller | None, app_id: str) -> AppState:
        """The state of the caller's tenant's app."""
        return await self._store.get_app_state(tenant_of(caller), app_id)

    async def update(
        self,
        caller: Caller | None,
        app_id: str,
        delta: dict[str, Any],
        expected_etag: str | None,
    ) -> AppState:
        """Merge ``delta`` into the app's state. Raises ``PermissionDenied``
        for a caller without the admin role, and the store's errors."""
        if caller is not None and not caller.admin:
            raise PermissionDenied(
                f"only an admin of the tenant may write {app_state_name(app_id)}",
                metadata={"role": "admin"},
                reason="PERMISSION_DENIED",
            )
        return await self._store.update_app_state(tenant_of(caller), app_id, delta, expected_etag)
