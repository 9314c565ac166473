"""The few Mnemo calls a session makes, over either client.

An ``AsyncMnemoClient`` is awaited directly (it belongs to the caller's event
loop). A ``MnemoClient`` is called in a worker thread (``asyncio.to_thread``,
as the SDK's ``SQLiteSession`` does with sqlite3), so one session works from
any event loop and thread: ``Runner.run_sync`` runs its own loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.v1 import conversations_pb2 as cv


class Backend(Protocol):
    """The calls of a session: each raises the client's ``MnemoError`` subclasses."""

    async def get_conversation(self, user: str, conversation: str) -> cv.Conversation: ...

    async def list_from(
        self, user: str, conversation: str, start: int, page_size: int
    ) -> list[cv.HistoryMessage]: ...

    async def append(
        self,
        user: str,
        conversation: str,
        messages: Sequence[str],
        metadata: Mapping[str, Any],
        request_id: str,
    ) -> cv.AppendMessagesResponse: ...

    async def pop(
        self, user: str, conversation: str, expected_next_position: int, request_id: str
    ) -> cv.PopMessagesResponse: ...

    async def clear(self, user: str, conversation: str) -> None: ...

    def close(self) -> None: ...


class AsyncBackend:
    """Over an ``AsyncMnemoClient`` the caller gave (and closes)."""

    def __init__(self, client: AsyncMnemoClient) -> None:
        self.client = client

    async def get_conversation(self, user: str, conversation: str) -> cv.Conversation:
        return await self.client.get_conversation(user, conversation)

    async def list_from(
        self, user: str, conversation: str, start: int, page_size: int
    ) -> list[cv.HistoryMessage]:
        pages = self.client.list_messages(
            user, conversation, start_position=start, page_size=page_size
        )
        return [message async for message in pages]

    async def append(
        self,
        user: str,
        conversation: str,
        messages: Sequence[str],
        metadata: Mapping[str, Any],
        request_id: str,
    ) -> cv.AppendMessagesResponse:
        return await self.client.append_messages(
            user, conversation, messages, metadata=metadata, request_id=request_id
        )

    async def pop(
        self, user: str, conversation: str, expected_next_position: int, request_id: str
    ) -> cv.PopMessagesResponse:
        return await self.client.pop_messages(
            user,
            conversation,
            1,
            expected_next_position=expected_next_position,
            request_id=request_id,
        )

    async def clear(self, user: str, conversation: str) -> None:
        await self.client.clear_messages(user, conversation)

    def close(self) -> None:
        """Nothing: the caller closes its client."""


class ThreadBackend:
    """Over a ``MnemoClient`` (thread-safe), each call in a worker thread."""

    def __init__(self, client: MnemoClient, *, owned: bool) -> None:
        self.client = client
        self._owned = owned

    async def get_conversation(self, user: str, conversation: str) -> cv.Conversation:
        return await asyncio.to_thread(self.client.get_conversation, user, conversation)

    async def list_from(
        self, user: str, conversation: str, start: int, page_size: int
    ) -> list[cv.HistoryMessage]:
        def read() -> list[cv.HistoryMessage]:
            pages = self.client.list_messages(
                user, conversation, start_position=start, page_size=page_size
            )
            return list(pages)

        return await asyncio.to_thread(read)

    async def append(
        self,
        user: str,
        conversation: str,
        messages: Sequence[str],
        metadata: Mapping[str, Any],
        request_id: str,
    ) -> cv.AppendMessagesResponse:
        return await asyncio.to_thread(
            self.client.append_messages,
            user,
            conversation,
            messages,
            metadata=metadata,
            request_id=request_id,
        )

    async def pop(
        self, user: str, conversation: str, expected_next_position: int, request_id: str
    ) -> cv.PopMessagesResponse:
        return await asyncio.to_thread(
            self.client.pop_messages,
            user,
            conversation,
            1,
            expected_next_position=expected_next_position,
            request_id=request_id,
        )

    async def clear(self, user: str, conversation: str) -> None:
        await asyncio.to_thread(self.client.clear_messages, user, conversation)

    def close(self) -> None:
        """Close the client if the session opened it."""
        if self._owned:
            self.client.close()
