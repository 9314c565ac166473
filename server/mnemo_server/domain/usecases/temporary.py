"""The purge of expired temporary conversations: a loop the server runs
until it shuts down (``MnemoServer`` starts it; ``--purge-interval-seconds``).

Until the purge gets to it, an expired conversation is already treated as
gone by every read (``store.conversations.temporary``); the purge frees the rows.
"""

from __future__ import annotations

import asyncio

from mnemo_server.domain.ports import ConversationStore
from mnemo_server.runtime.periodic import drain, repeat_until_stopped

PURGE_BATCH = 500
"""Conversations deleted per transaction."""


async def purge_once(store: ConversationStore, *, batch: int = PURGE_BATCH) -> int:
    """Delete every conversation expired by now, ``batch`` per transaction;
    how many."""
    return await drain(lambda limit: store.purge_expired_conversations(limit=limit), batch)


async def purge_until_stopped(
    store: ConversationStore, interval_seconds: float, stopping: asyncio.Event
) -> None:
    """``purge_once`` every ``interval_seconds`` until ``stopping`` is set (a
    failed round is logged and retried at the next one)."""

    async def round_() -> str:
        purged = await purge_once(store)
        return f"purged {purged} expired temporary conversation(s)" if purged else ""

    await repeat_until_stopped(
        round_, interval_seconds, stopping, "purging expired temporary conversations"
    )
