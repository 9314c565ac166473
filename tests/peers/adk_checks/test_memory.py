"""``MnemoMemoryService`` against the live server, beside ADK's ``InMemoryMemoryService``
where their documented behaviour is the same; and ``mnemo://`` in ADK's service registry."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from google.adk.cli.service_registry import get_service_registry
from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from mnemo.integrations.adk import MnemoMemoryService, MnemoSessionService, register, target_of

JAN = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
FEB = datetime(2026, 2, 9, 18, 15, 30, 250000, tzinfo=UTC)


def said(author: str, text: str, at: datetime | None = None) -> Event:
    role = "user" if author == "user" else "model"
    event = Event(
        invocation_id="inv",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )
    if at is not None:
        event.timestamp = at.timestamp()
    return event


def session_of(user_id: str, *events: Event) -> Session:
    return Session(
        id=f"s-{uuid.uuid4().hex[:8]}", app_name="mem-app", user_id=user_id, events=list(events)
    )


def found_texts(response: Any) -> list[str]:
    return [part.text for m in response.memories for part in m.content.parts if part.text]


@pytest.mark.parametrize("kind", ["mnemo-events", "in_memory"])
async def test_session_events_are_searchable(server: Any, kind: str) -> None:
    user_id = f"mem-{uuid.uuid4().hex[:10]}"
    memory: Any = (
        MnemoMemoryService(server.target, mode="events")
        if kind != "in_memory"
        else InMemoryMemoryService()
    )
    session = session_of(
        user_id, said("user", "My cat is called Whiskers"), said("agent", "Lovely name")
    )
    await memory.add_session_to_memory(session)
    await memory.add_session_to_memory(session)  # again: nothing stored, not duplicated
    hits = await memory.search_memory(app_name="mem-app", user_id=user_id, query="Whiskers")
    assert found_texts(hits) == ["My cat is called Whiskers"]
    assert hits.memories[0].author == "user"
    other = await memory.search_memory(app_name="mem-app", user_id=user_id + "-b", query="Whiskers")
    assert other.memories == []
    if kind != "in_memory":
        await memory.close()


async def test_events_keep_their_time_and_are_stored_once(server: Any) -> None:
    user_id = f"mem-{uuid.uuid4().hex[:10]}"
    memory = MnemoMemoryService(server.target, mode="events")
    event = said("user", "My dog is called Rex", at=JAN)
    session = session_of(user_id, event)
    await memory.add_session_to_memory(session)
    await memory.add_events_to_memory(app_name="mem-app", user_id=user_id, events=[event])
    stored = [m async for m in memory.client.list_memories(user_id, include_archived=True)]
    assert [m.text for m in stored] == ["My dog is called Rex"]  # one entry, no second version
    assert stored[0].event_time.ToDatetime(UTC) == JAN
    assert (await memory.client.get_memory(user_id, stored[0].name)).event_time == stored[
        0
    ].event_time
    hits = await memory.search_memory(app_name="mem-app", user_id=user_id, query="Rex")
    assert hits.memories[0].timestamp == JAN.isoformat()  # when it was said, as ADK's own gives
    await memory.close()


async def test_extractor_mode_keeps_what_the_user_said(server: Any) -> None:
    user_id = f"mem-{uuid.uuid4().hex[:10]}"
    memory = MnemoMemoryService(server.target)
    await memory.add_session_to_memory(
        session_of(
            user_id, said("user", "I am allergic to peanuts."), said("agent", "Noted, peanuts.")
        )
    )
    hits = await memory.search_memory(app_name="mem-app", user_id=user_id, query="peanuts")
    assert hits.memories, "the extractor saved nothing"
    assert all("peanut" in text.lower() for text in found_texts(hits))
    assert (
        await memory.search_memory(app_name="mem-app", user_id=user_id, query=" ") == type(hits)()
    )
    await memory.close()


async def test_extractor_mode_dates_what_it_finds_by_the_message(server: Any) -> None:
    """Each user message goes to ExtractMemories with its event's timestamp, so a
    fact gets the time it was said, not the time the session was added."""
    user_id = f"mem-{uuid.uuid4().hex[:10]}"
    memory = MnemoMemoryService(server.target)
    await memory.add_session_to_memory(
        session_of(
            user_id,
            said("user", "My name is Ada.", at=JAN),
            said("agent", "Hello Ada, I will remember that.", at=JAN),
            said("user", "I am allergic to peanuts.", at=FEB),
        )
    )
    stored = [m async for m in memory.client.list_memories(user_id)]
    when = {m.key: m.event_time.ToDatetime(UTC) for m in stored}
    assert when.pop("profile.name") == JAN
    assert list(when.values()) == [FEB] and next(iter(when)).startswith("health.allergy.")
    hits = await memory.search_memory(app_name="mem-app", user_id=user_id, query="peanuts")
    assert [m.timestamp for m in hits.memories] == [FEB.isoformat()]
    # add_events_to_memory too; the same facts again are stored once, with their first time.
    later = datetime(2026, 3, 1, tzinfo=UTC)
    await memory.add_events_to_memory(
        app_name="mem-app",
        user_id=user_id,
        events=[said("user", "I moved to Lisbon.", at=later), said("user", "My name is Ada.")],
    )
    again = {
        m.key: m.event_time.ToDatetime(UTC) async for m in memory.client.list_memories(user_id)
    }
    assert again.pop("profile.location") == later
    assert again == {"profile.name": JAN, **when}
    await memory.close()


async def test_add_and_delete_memory(server: Any) -> None:
    user_id = f"mem-{uuid.uuid4().hex[:10]}"
    memory = MnemoMemoryService(server.target)
    entry = MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text="Prefers window seats")]),
        author="user",
        custom_metadata={"source": "profile"},
        timestamp=JAN.isoformat(),
    )
    await memory.add_memory(app_name="mem-app", user_id=user_id, memories=[entry])
    await memory.add_memory(app_name="mem-app", user_id=user_id, memories=[entry])  # once
    hits = await memory.search_memory(app_name="mem-app", user_id=user_id, query="window seats")
    assert found_texts(hits) == ["Prefers window seats"]
    assert hits.memories[0].custom_metadata["source"] == "profile"
    stored = await memory.client.get_memory(user_id, hits.memories[0].id)
    assert (
        stored.event_time.ToDatetime(UTC) == JAN and hits.memories[0].timestamp == JAN.isoformat()
    )
    await memory.delete_memory(app_name="mem-app", user_id=user_id, memory_id=hits.memories[0].id)
    await memory.delete_memory(app_name="mem-app", user_id=user_id, memory_id=hits.memories[0].id)
    gone = await memory.search_memory(app_name="mem-app", user_id=user_id, query="window seats")
    assert gone.memories == []
    await memory.close()


async def test_mnemo_uris_in_adks_registry(server: Any) -> None:
    register()
    registry = get_service_registry()
    uri = f"mnemo://{server.target}"
    sessions = registry.create_session_service(uri, agents_dir="/nonexistent")
    memory = registry.create_memory_service(uri, agents_dir="/nonexistent")
    assert isinstance(sessions, MnemoSessionService) and isinstance(memory, MnemoMemoryService)
    created = await sessions.create_session(
        app_name="uri-app", user_id=f"uri-{uuid.uuid4().hex[:8]}"
    )
    assert created.id
    await sessions.close()
    await memory.close()
    assert target_of("mnemo://[::1]:50051") == "[::1]:50051"
    for bad in ("mnemo://host", "grpc://host:1", "mnemo://:50051"):
        with pytest.raises(ValueError):
            target_of(bad)
