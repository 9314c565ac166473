"""``MnemoMemoryService``: ADK's memory as Mnemo's long-term memory of the user.

``add_session_to_memory`` (and ``add_events_to_memory``) turn events into
memories in one of two ways, chosen at construction:

- ``"extract"`` (default): the server's heuristic extractor
  (ExtractMemories) reads the user's messages and saves what it finds (names,
  preferences, "remember that ..."), keyed, so adding a session again
  supersedes rather than duplicates; each message carries its event's
  ``timestamp`` (``HistoryMessage.event_time``), so what is found in it gets
  the time it was said as its event time;
- ``"events"``: every event with text becomes one memory, keyed by the
  event id (adding it again stores nothing: the same fact is live), with
  ``adk_app``, ``adk_session`` and ``adk_author`` metadata and the event's
  ``timestamp`` as its event time.

``add_memory`` saves each ``MemoryEntry`` with its ``timestamp`` (ISO 8601)
as the event time; the same text twice is one memory (the server keeps one
live entry per fact). ``search_memory`` is Mnemo recall (RecallMemories) over
the user's memories; a hit's ``timestamp`` is its event time, when the fact
was said, as ADK's ``InMemoryMemoryService`` gives the event's time.
Mnemo's memory belongs to the user, not to an app: a search sees what any of
the user's apps saved (docs/integrations/adk.md, intended differences).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from typing_extensions import override

import mnemo.client as mc
from mnemo.integrations.adk._client import ClientHolder
from mnemo.integrations.adk._events import conversation_id, event_text

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

Mode = Literal["extract", "events"]
#: Hits a search returns, as ADK's InMemoryMemoryService.
MAX_RESULTS = 10
APP_KEY = "adk_app"
SESSION_KEY = "adk_session"
AUTHOR_KEY = "adk_author"


def _iso(timestamp: Any) -> str | None:
    if not timestamp.seconds and not timestamp.nanos:
        return None
    return datetime.fromtimestamp(timestamp.ToMicroseconds() / 1_000_000, UTC).isoformat()


def event_time_of(event: Event) -> datetime | None:
    """When the event happened (``Event.timestamp``, epoch seconds); ``None`` if unset."""
    return datetime.fromtimestamp(event.timestamp, UTC) if event.timestamp > 0 else None


def entry_time_of(entry: MemoryEntry) -> datetime | None:
    """A ``MemoryEntry.timestamp`` (ISO 8601; naive is local time, as ADK's
    own ``format_timestamp`` writes it) as a datetime; ``None`` if it is
    missing or not ISO 8601."""
    if not entry.timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(entry.timestamp)
    except ValueError:
        return None
    return parsed.astimezone(UTC)


def _content_text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


class MnemoMemoryService(BaseMemoryService):  # type: ignore[misc]  # (Any where mypy runs: pyproject.toml)
    """ADK's ``BaseMemoryService`` over a Mnemo server (constructed as
    ``MnemoSessionService``; ``mode`` picks how events become memories).

    Raises (from the methods):
        mnemo.client.MnemoError: what the server answered (consent withdrawn,
            memory switched off, a temporary conversation...).
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        uri: str | None = None,
        client: mc.AsyncMnemoClient | None = None,
        token: str | None = None,
        mode: Mode = "extract",
        **client_options: Any,
    ) -> None:
        if mode not in ("extract", "events"):
            raise ValueError(f"mode must be 'extract' or 'events', got {mode!r}")
        self.mode: Mode = mode
        self._holder = ClientHolder(
            target, uri=uri, client=client, token=token, options=client_options
        )

    @property
    def client(self) -> mc.AsyncMnemoClient:
        """The Mnemo client (opened on first use)."""
        return self._holder.get()

    async def close(self) -> None:
        """Close the client if this service opened it."""
        await self._holder.close()

    async def _add(
        self, app_name: str, user_id: str, session_id: str | None, events: Sequence[Event]
    ) -> None:
        with_text = [(event, event_text(event)) for event in events]
        with_text = [(event, text) for event, text in with_text if text]
        if not with_text:
            return
        if self.mode == "extract":
            said = [(e, text) for e, text in with_text if e.author == "user"]
            if said:
                await self._extract(user_id, said)
            return
        for event, text in with_text:
            metadata = {APP_KEY: app_name, AUTHOR_KEY: event.author}
            if session_id:
                metadata[SESSION_KEY] = session_id
            await self.client.create_memory(
                user_id,
                text,
                key=f"adk:{app_name}:{event.id}",
                metadata=metadata,
                event_time=event_time_of(event),
            )

    async def _extract(self, user_id: str, said: Sequence[tuple[Event, str]]) -> None:
        """ExtractMemories over the user's messages, each with its event's time
        (``HistoryMessage.event_time``; unset for an event without a timestamp)."""
        await self.client.extract_memories(
            user_id,
            [{"role": "user", "content": text} for _, text in said],
            said_at=[event_time_of(event) for event, _ in said],
        )

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        """Turn the session's events into memories of its user (see the module)."""
        conversation_id(session.app_name, session.id)  # refuses names Mnemo cannot hold
        await self._add(session.app_name, session.user_id, session.id, session.events)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """As ``add_session_to_memory``, for these events only (``custom_metadata`` is ignored)."""
        await self._add(app_name, user_id, session_id, events)

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Save each entry's text as a memory (its ``custom_metadata`` and
        ``custom_metadata`` here as string metadata, with ``adk_app``; its
        ``timestamp`` as the event time). A text already saved is not saved again."""
        for entry in memories:
            text = _content_text(entry.content)
            if not text:
                continue
            metadata = {
                str(k): str(v)
                for k, v in {**(custom_metadata or {}), **entry.custom_metadata}.items()
            }
            metadata[APP_KEY] = app_name
            if entry.author:
                metadata[AUTHOR_KEY] = entry.author
            await self.client.create_memory(
                user_id, text, metadata=metadata, event_time=entry_time_of(entry)
            )

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories matching ``query``, best first (at most 10; none for an empty query)."""
        if not query.strip():
            return SearchMemoryResponse()
        entries = [
            MemoryEntry(
                id=hit.memory.name,
                content=types.Content(role="user", parts=[types.Part(text=hit.memory.text)]),
                author=hit.memory.metadata.get(AUTHOR_KEY) or None,
                timestamp=_iso(
                    hit.memory.event_time
                    if hit.memory.HasField("event_time")
                    else hit.memory.create_time
                ),
                custom_metadata=dict(hit.memory.metadata),
            )
            async for hit in self.client.recall_memories(user_id, query, max_results=MAX_RESULTS)
        ]
        return SearchMemoryResponse(memories=entries)

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete the memory ``memory_id`` (a ``MemoryEntry.id`` from ``search_memory``;
        nothing if it is gone)."""
        if not memory_id:
            return
        try:
            await self.client.delete_memory(user_id, memory_id.rsplit("/", 1)[-1])
        except mc.NotFoundError:
            return
