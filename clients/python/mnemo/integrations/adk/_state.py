"""ADK's ``user:`` and ``app:`` state in Mnemo.

User state of ``(app, user)`` is the document ``("adk", app) / "user_state"``
of that user (DocumentService): under the user's governance like the rest of
their data (export, import, erasure, change feed), never readable by another
user. A delta is merged by read, update, conditional write (the document's
etag), retried when another writer got there first.

App state is ``apps/{app}/state`` (AgentStateService): the tenant's, read by
all its users, written only by its admins (anyone under ``--auth none``); the
server merges a delta in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo.client import (
    AsyncMnemoClient,
    EtagMismatchError,
    NotFoundError,
    app_state_value,
    document_value,
)

NAMESPACE = "adk"
USER_STATE_KEY = "user_state"
#: Conditional writes tried before giving up on a delta.
MAX_MERGE_ATTEMPTS = 8


def namespace(app_name: str) -> tuple[str, str]:
    """The document namespace of an app's state."""
    return (NAMESPACE, app_name)


async def read_state(
    client: AsyncMnemoClient, user_id: str, app_name: str, key: str
) -> dict[str, Any]:
    """The stored state (``{}`` when there is none)."""
    try:
        found = await client.get_document(user_id, namespace(app_name), key)
    except NotFoundError:
        return {}
    return document_value(found)


async def merge_state(
    client: AsyncMnemoClient,
    user_id: str,
    app_name: str,
    key: str,
    delta: Mapping[str, Any],
) -> dict[str, Any]:
    """Merge ``delta`` into the stored state (``dict.update``); the state after it.

    Raises:
        EtagMismatchError: writers kept racing for ``MAX_MERGE_ATTEMPTS`` rounds.
        mnemo.client.MnemoError: what the server answered (consent withdrawn,
            memory switched off, too large...).
    """
    for attempt in range(MAX_MERGE_ATTEMPTS):
        etag = ""
        state: dict[str, Any] = {}
        try:
            found = await client.get_document(user_id, namespace(app_name), key)
            etag = found.etag
            state = document_value(found)
        except NotFoundError:
            pass
        state.update(delta)
        try:
            await client.put_document(user_id, namespace(app_name), key, state, index=(), etag=etag)
        except EtagMismatchError:
            if attempt + 1 == MAX_MERGE_ATTEMPTS:
                raise
            continue
        return state
    raise AssertionError("unreachable")  # pragma: no cover


async def read_app_state(client: AsyncMnemoClient, app_name: str) -> dict[str, Any]:
    """The app's state (``{}`` when never written)."""
    return app_state_value(await client.get_app_state(app_name))


async def merge_app_state(
    client: AsyncMnemoClient, app_name: str, delta: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``delta`` into the app's state; the state after it.

    Raises:
        mnemo.client.PermissionDeniedError: the token is not an admin's.
    """
    return app_state_value(await client.update_app_state(app_name, delta))
