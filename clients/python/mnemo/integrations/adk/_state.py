"""ADK's ``app:`` and ``user:`` state, kept as Mnemo documents of the user.

User state of ``(app, user)`` is the document ``("adk", app) / "user_state"``
of that user (DocumentService): under the user's governance like the rest of
their data (export, import, erasure, change feed), never readable by another
user. App state is the document ``("adk", app) / "app_state"`` of the same
user: Mnemo has no tenant-level resource yet, so ``app:`` keys are shared by
one user's sessions of the app, not by all its users (an intended difference,
docs/integrations/adk.md).

A delta is merged by read, update, conditional write (the document's etag),
retried when another writer got there first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo.client import AsyncMnemoClient, EtagMismatchError, NotFoundError, document_value

NAMESPACE = "adk"
USER_STATE_KEY = "user_state"
APP_STATE_KEY = "app_state"
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
