"""``MnemoSession``: the OpenAI Agents SDK's ``Session`` over a Mnemo conversation."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
from agents.items import TResponseInputItem
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from mnemo.client import (
    DEFAULT_TARGET,
    DEFAULT_TIMEOUT,
    AsyncMnemoClient,
    MnemoClient,
    NotFoundError,
    PositionMismatchError,
)
from mnemo.integrations.openai_agents import _items
from mnemo.integrations.openai_agents._backend import AsyncBackend, Backend, ThreadBackend
from mnemo.v1 import conversations_pb2 as cv

T = TypeVar("T")

#: ``AppendMessages`` takes at most this many messages; longer lists go in several calls.
MAX_ITEMS_PER_APPEND = 500
#: ... and a request of at most 4 MiB: a call carries at most about this many bytes of JSON.
MAX_BYTES_PER_APPEND = 2 * 1024 * 1024
#: ``ListMessages``' largest page.
PAGE_SIZE = 1000
#: Pops (and tail reads) tried again after another writer moved the tail, before giving up.
POP_ATTEMPTS = 16
#: The conversation's metadata when the first ``add_items`` creates it.
ORIGIN = "openai-agents"


class MnemoSession:
    """A ``Session`` of the OpenAI Agents SDK kept in a Mnemo conversation.

    A drop-in for ``SQLiteSession``: every process that opens the same
    ``session_id`` for the same ``user`` on the same server (a phone, a laptop,
    a cloud worker) shares one history::

        session = MnemoSession("conv_123", user="alice", target="mnemo:50051", token=t)
        await Runner.run(agent, "Hi", session=session)

    The conversation id is ``session_id`` (escaped when it is not a valid
    Mnemo id, see ``conversation_id``); pass ``conversation_id`` to choose it.
    Each item is stored losslessly (``get_items`` returns what ``add_items``
    was given) with a readable projection for Mnemo's text and search.

    Pass ``client`` to share a ``MnemoClient`` or an ``AsyncMnemoClient`` (the
    session does not close it; an ``AsyncMnemoClient`` must belong to the
    event loop the session is used in); otherwise the session opens a
    ``MnemoClient`` to ``target`` with ``token`` and ``credentials`` (TLS) and
    ``close`` closes it. Calls run in a worker thread then, as
    ``SQLiteSession``'s do, so the session works from any event loop
    (``Runner.run_sync`` included).

    Errors: every method raises the ``mnemo.client.MnemoError`` subclass of a
    failed call (``UnavailableError`` once the client's retries are spent,
    ``InvalidArgumentError`` for an item Mnemo refuses, ``UnauthenticatedError``,
    ...), plain exceptions that the SDK's runner lets through to its caller as
    it does ``sqlite3`` errors, and ``RuntimeError`` once the session is
    closed. Writes run to their end even when the calling task is cancelled
    (the cancellation is raised afterwards), so an outcome is never unknown.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        user: str,
        target: str = DEFAULT_TARGET,
        token: str | Callable[[], str] | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client: MnemoClient | AsyncMnemoClient | None = None,
        conversation_id: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.user = user
        self.conversation_id = conversation_id or _items.conversation_id(session_id)
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._backend: Backend
        if isinstance(client, AsyncMnemoClient):
            self._backend = AsyncBackend(client)
        elif client is not None:
            self._backend = ThreadBackend(client, owned=False)
        else:
            opened = MnemoClient(target, token=token, credentials=credentials, timeout=timeout)
            self._backend = ThreadBackend(opened, owned=True)
        self._closed = False

    # ------------------------------------------------------------- Session

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items, oldest first (all with ``None``).

        ``limit`` ``None`` takes ``session_settings.limit``; 0 returns none and
        a negative limit all, as ``SQLiteSession`` does. With a positive limit
        only the tail is read (the message count, then the messages from
        ``count - limit``). A session nothing was added to has no items.
        """
        self._check_open()
        session_limit = resolve_session_limit(limit, self.session_settings)
        if session_limit == 0:
            return []
        try:
            if session_limit is None or session_limit < 0:
                messages = await self._backend.list_from(
                    self.user, self.conversation_id, 0, PAGE_SIZE
                )
            else:
                messages = await self._tail(session_limit)
        except NotFoundError:
            return []
        return [_items.item(message) for message in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in order; the first call creates the conversation.

        Each append carries its own request id, so the client's retries (on
        ``UNAVAILABLE``) never store an item twice. More than 500 items (or
        about 2 MiB) go in several appends, each atomic.

        Raises ``TypeError`` / ``ValueError`` before writing anything when an
        item is not JSON; ``InvalidArgumentError`` (``FIELD_TOO_LARGE``) for
        an item larger than the server's ``--max-message-bytes``.
        """
        self._check_open()
        if not items:
            return
        encoded = [_items.message_json(item) for item in items]
        await _finish(self._append(encoded))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item; ``None`` when there is none.

        Reads the message count, then pops the last message only if the count
        is still that (``expected_next_position``); when another writer moved
        the tail in between, it pops the new last item (up to 16 tries).

        Raises ``HistoryCompactedError`` when a compaction checkpoint covers
        the last message; ``PositionMismatchError`` after 16 lost races.
        """
        self._check_open()
        return await _finish(self._pop())

    async def clear_session(self) -> None:
        """Remove every item; the conversation stays, empty (and its failed runs)."""
        self._check_open()
        await _finish(self._clear())

    # ----------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close the client the session opened (not one it was given); idempotent."""
        if not self._closed:
            self._closed = True
            self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.session_id!r}, user={self.user!r}, "
            f"conversation_id={self.conversation_id!r})"
        )

    # ------------------------------------------------------------ the calls

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    async def _append(self, encoded: Sequence[str]) -> None:
        base = str(uuid.uuid4())
        metadata = {"origin": ORIGIN, "session_id": self.session_id}
        for number, chunk in enumerate(_chunks(encoded)):
            await self._backend.append(
                self.user, self.conversation_id, chunk, metadata, f"{base}-{number}"
            )

    async def _message_count(self) -> int:
        conversation = await self._backend.get_conversation(self.user, self.conversation_id)
        return conversation.message_count

    async def _tail(self, limit: int) -> list[cv.HistoryMessage]:
        """The last ``limit`` messages: the count, then the messages from ``count - limit``.

        Appends between the two reads are cut off; when pops shortened the
        history in between, so that the read started past some of the last
        ``limit``, it is read again.
        """
        for _ in range(POP_ATTEMPTS):
            conversation = await self._backend.get_conversation(self.user, self.conversation_id)
            start = max(0, conversation.message_count - limit)
            messages = await self._backend.list_from(
                self.user, self.conversation_id, start, min(limit, PAGE_SIZE)
            )
            if start == 0 or len(messages) >= limit:
                return messages[-limit:]
        return messages

    async def _pop(self) -> TResponseInputItem | None:
        try:
            next_position = await self._message_count()
        except NotFoundError:
            return None
        for attempt in range(POP_ATTEMPTS):
            if next_position == 0:
                return None
            try:
                popped = await self._backend.pop(
                    self.user, self.conversation_id, next_position, str(uuid.uuid4())
                )
            except NotFoundError:
                return None
            except PositionMismatchError as error:
                if attempt == POP_ATTEMPTS - 1:
                    raise
                told = error.metadata.get("next_position", "")
                if told.isdigit():
                    next_position = int(told)
                else:
                    next_position = await self._message_count()
                continue
            return _items.item(popped.messages[0]) if popped.messages else None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _clear(self) -> None:
        try:
            await self._backend.clear(self.user, self.conversation_id)
        except NotFoundError:
            pass


def _chunks(encoded: Sequence[str]) -> list[list[str]]:
    """``encoded`` cut into appends of at most 500 messages and about 2 MiB."""
    chunks: list[list[str]] = [[]]
    size = 0
    for message in encoded:
        length = len(message.encode("utf-8"))
        full = len(chunks[-1]) == MAX_ITEMS_PER_APPEND or size + length > MAX_BYTES_PER_APPEND
        if chunks[-1] and full:
            chunks.append([])
            size = 0
        chunks[-1].append(message)
        size += length
    return chunks


async def _finish(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end even if the caller is cancelled meanwhile.

    A write cut off mid-call might or might not have been applied; waiting for
    it keeps the session's state known. The cancellation is raised afterwards.
    """
    task = asyncio.ensure_future(awaitable)
    cancellation: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancellation = cancellation or error
    if cancellation is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise cancellation
    return task.result()
