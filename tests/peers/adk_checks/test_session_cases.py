"""ADK's documented session-service behaviour, as shared cases.

Every case runs on ``MnemoSessionService`` and on ADK's own
``DatabaseSessionService`` (sqlite+aiosqlite) and ``InMemorySessionService``
(the ``service`` fixture), so a difference shows as a failing case on one
side. The differences we intend are in ``INTENDED_DIFFERENCES`` (strict
xfails: a case that starts passing fails the run, so the list stays true).
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types

#: (case, service) -> why that service behaves differently, on purpose.
INTENDED_DIFFERENCES: dict[tuple[str, str], str] = {
    ("test_list_sessions_of_every_user", "mnemo"): (
        "Mnemo lists one user's conversations at a time: list_sessions(user_id=None) "
        "raises NotImplementedError"
    ),
    ("test_stale_copy_is_refused", "in_memory"): (
        "InMemorySessionService has no stale-writer check (it appends from any copy)"
    ),
    ("test_hand_built_session_behind_storage_is_stale", "in_memory"): (
        "InMemorySessionService has no stale-writer check (it appends from any copy)"
    ),
    ("test_names_mnemo_cannot_hold_are_refused", "database"): (
        "ADK's services take any string; Mnemo ids are letters, digits and . _ : -"
    ),
    ("test_names_mnemo_cannot_hold_are_refused", "in_memory"): (
        "ADK's services take any string; Mnemo ids are letters, digits and . _ : -"
    ),
}


def kind(service: BaseSessionService) -> str:
    name = type(service).__name__
    return {"MnemoSessionService": "mnemo", "DatabaseSessionService": "database"}.get(
        name, "in_memory"
    )


def text_event(author: str, text: str, delta: dict[str, Any] | None = None, **extra: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        invocation_id="inv-1",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
        **extra,
    )


def dumped(events: list[Event]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude_none=True) for e in events]


async def test_create_then_get(service: BaseSessionService, app_name: str, user_id: str) -> None:
    created = await service.create_session(
        app_name=app_name, user_id=user_id, state={"k": "v", "n": 1}, session_id="s1"
    )
    assert (created.id, created.app_name, created.user_id) == ("s1", app_name, user_id)
    assert created.state == {"k": "v", "n": 1}
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id="s1")
    assert got is not None
    assert got.state == {"k": "v", "n": 1}
    assert got.events == []
    assert got.last_update_time == pytest.approx(created.last_update_time, abs=1e-3)


async def test_generated_ids_are_unique(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    first = await service.create_session(app_name=app_name, user_id=user_id)
    second = await service.create_session(app_name=app_name, user_id=user_id)
    assert first.id and second.id and first.id != second.id
    assert await service.get_session(app_name=app_name, user_id=user_id, session_id=first.id)


async def test_taken_id_is_refused(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    await service.create_session(app_name=app_name, user_id=user_id, session_id="dup")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=app_name, user_id=user_id, session_id="dup")


async def test_missing_session_is_none(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    assert await service.get_session(app_name=app_name, user_id=user_id, session_id="nope") is None


async def test_sessions_are_per_user(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    await service.create_session(app_name=app_name, user_id=user_id, session_id="mine")
    other = user_id + "-other"
    assert await service.get_session(app_name=app_name, user_id=other, session_id="mine") is None


async def test_events_round_trip(service: BaseSessionService, app_name: str, user_id: str) -> None:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    call = types.Part(
        function_call=types.FunctionCall(id="c1", name="weather", args={"city": "Paris", "days": 3})
    )
    events = [
        text_event("user", "What is the weather in Paris?"),
        Event(
            invocation_id="inv-1",
            author="agent",
            content=types.Content(role="model", parts=[call]),
            custom_metadata={"n": 1, "nested": {"ok": True}},
        ),
        text_event("agent", "Sunny, 21 °C ☀"),
    ]
    for event in events:
        await service.append_event(session, event)
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert got is not None
    assert dumped(got.events) == dumped(events)
    assert dumped(session.events) == dumped(events)


async def test_state_delta_by_scope(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    session = await service.create_session(
        app_name=app_name,
        user_id=user_id,
        state={"app:a": 1, "user:u": "x", "temp:t": "gone", "s": [1, 2]},
    )
    assert "temp:t" not in session.state
    assert session.state == {"app:a": 1, "user:u": "x", "s": [1, 2]}
    event = text_event("agent", "ok", {"s": [3], "user:u": "y", "app:b": {"deep": 2}, "temp:x": 5})
    await service.append_event(session, event)
    # temp: reaches the live session, never the event stored nor the storage.
    assert session.state["temp:x"] == 5
    assert "temp:x" not in event.actions.state_delta
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert got is not None
    assert got.state == {"app:a": 1, "app:b": {"deep": 2}, "user:u": "y", "s": [3]}
    assert "temp:x" not in got.events[-1].actions.state_delta
    # A new session of the same user and app sees app: and user: state, not session state.
    fresh = await service.create_session(app_name=app_name, user_id=user_id)
    assert fresh.state == {"app:a": 1, "app:b": {"deep": 2}, "user:u": "y"}
    assert await service.get_user_state(app_name=app_name, user_id=user_id) == {"u": "y"}


async def test_user_state_is_not_shared_across_users(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    await service.create_session(app_name=app_name, user_id=user_id, state={"user:secret": 42})
    other = await service.create_session(app_name=app_name, user_id=user_id + "-b")
    assert "user:secret" not in other.state
    assert await service.get_user_state(app_name=app_name, user_id=user_id + "-b") == {}


async def test_app_state_is_shared_by_all_users(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    await service.create_session(app_name=app_name, user_id=user_id, state={"app:motd": "hi"})
    other = await service.create_session(app_name=app_name, user_id=user_id + "-b")
    assert other.state.get("app:motd") == "hi"


async def test_state_values_keep_their_types(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    value = {
        "int": 7,
        "float": 1.5,
        "big": 2**53 + 1,
        "text": "é ✓",
        "none": None,
        "list": [1, "a"],
    }
    session = await service.create_session(
        app_name=app_name, user_id=user_id, state={"v": value, "user:v": value}
    )
    await service.append_event(session, text_event("agent", "x", {"w": value}))
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert got is not None
    for key in ("v", "user:v", "w"):
        assert got.state[key] == value
        assert type(got.state[key]["int"]) is int and type(got.state[key]["big"]) is int


async def _session_with_events(
    service: BaseSessionService, app_name: str, user_id: str, count: int
) -> tuple[str, list[Event]]:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    events: list[Event] = []
    base = time.time()
    for index in range(count):
        event = text_event(
            "user" if index % 2 == 0 else "agent", f"message {index}", timestamp=base + index
        )
        await service.append_event(session, event)
        events.append(event)
    return session.id, events


async def test_recent_events(service: BaseSessionService, app_name: str, user_id: str) -> None:
    session_id, events = await _session_with_events(service, app_name, user_id, 5)
    for recent, expected in ((2, events[-2:]), (0, []), (9, events), (None, events)):
        got = await service.get_session(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            config=GetSessionConfig(num_recent_events=recent),
        )
        assert got is not None
        assert dumped(got.events) == dumped(expected), recent


async def test_events_after_timestamp(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    session_id, events = await _session_with_events(service, app_name, user_id, 5)
    got = await service.get_session(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        config=GetSessionConfig(after_timestamp=events[2].timestamp),
    )
    assert got is not None
    assert dumped(got.events) == dumped(events[2:])
    both = await service.get_session(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        config=GetSessionConfig(after_timestamp=events[1].timestamp, num_recent_events=2),
    )
    assert both is not None
    assert dumped(both.events) == dumped(events[3:])


def test_negative_recent_events_is_refused() -> None:
    with pytest.raises(ValueError):
        GetSessionConfig(num_recent_events=-1)


async def test_list_sessions(service: BaseSessionService, app_name: str, user_id: str) -> None:
    first = await service.create_session(
        app_name=app_name, user_id=user_id, state={"n": 1, "user:u": 1}
    )
    await asyncio.sleep(0.01)
    second = await service.create_session(app_name=app_name, user_id=user_id, state={"n": 2})
    await service.append_event(first, text_event("user", "later"))
    await service.create_session(app_name=app_name + "x", user_id=user_id)
    await service.create_session(app_name=app_name, user_id=user_id + "-b")
    listed = (await service.list_sessions(app_name=app_name, user_id=user_id)).sessions
    assert [s.id for s in listed] == [second.id, first.id]  # oldest update first
    assert all(s.events == [] for s in listed)
    assert [s.state for s in listed] == [{"n": 2, "user:u": 1}, {"n": 1, "user:u": 1}]
    empty = await service.list_sessions(app_name=app_name, user_id=user_id + "-none")
    assert empty.sessions == []


async def test_list_sessions_of_every_user(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    await service.create_session(app_name=app_name, user_id=user_id, session_id="a")
    await service.create_session(app_name=app_name, user_id=user_id + "-b", session_id="b")
    listed = (await service.list_sessions(app_name=app_name)).sessions
    assert sorted((s.user_id, s.id) for s in listed) == [(user_id, "a"), (user_id + "-b", "b")]


async def test_delete_session(service: BaseSessionService, app_name: str, user_id: str) -> None:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    await service.append_event(session, text_event("user", "hello"))
    await service.delete_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert (
        await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id) is None
    )
    await service.delete_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert (await service.list_sessions(app_name=app_name, user_id=user_id)).sessions == []


async def test_append_to_deleted_session(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    await service.delete_session(app_name=app_name, user_id=user_id, session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, text_event("user", "hello"))


async def test_partial_events_are_not_stored(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    partial = text_event("agent", "stream…", {"s": 1}, partial=True)
    assert await service.append_event(session, partial) is partial
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert got is not None
    assert got.events == [] and got.state == {}


async def test_stale_copy_is_refused(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    created = await service.create_session(app_name=app_name, user_id=user_id)
    first = await service.get_session(app_name=app_name, user_id=user_id, session_id=created.id)
    second = await service.get_session(app_name=app_name, user_id=user_id, session_id=created.id)
    assert first is not None and second is not None
    await service.append_event(first, text_event("user", "one", {"s": 1}))
    with pytest.raises(StaleSessionError):
        await service.append_event(second, text_event("user", "two", {"s": 2}))
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=created.id)
    assert got is not None
    assert [e.content.parts[0].text for e in got.events if e.content and e.content.parts] == ["one"]
    assert got.state == {"s": 1}
    # A reloaded session appends again.
    await service.append_event(got, text_event("user", "three"))


async def test_hand_built_session_behind_storage_is_stale(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    created = await service.create_session(app_name=app_name, user_id=user_id)
    # Not read from the service (no storage marker): judged by its events.
    current = Session(id=created.id, app_name=app_name, user_id=user_id)
    await service.append_event(current, text_event("user", "one"))
    behind = Session(id=created.id, app_name=app_name, user_id=user_id)
    with pytest.raises(StaleSessionError):
        await service.append_event(behind, text_event("user", "two"))
    caught_up = Session(
        id=created.id, app_name=app_name, user_id=user_id, events=list(current.events)
    )
    await service.append_event(caught_up, text_event("user", "three"))
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=created.id)
    assert got is not None
    assert [e.content.parts[0].text for e in got.events if e.content and e.content.parts] == [
        "one",
        "three",
    ]


async def test_appends_continue_on_the_same_object(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id=user_id)
    for index in range(3):
        await service.append_event(session, text_event("user", f"m{index}", {"i": index}))
    got = await service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert got is not None
    assert len(got.events) == 3 and got.state == {"i": 2}
    assert got.last_update_time == pytest.approx(session.last_update_time, abs=1e-3)


async def test_names_mnemo_cannot_hold_are_refused(
    service: BaseSessionService, app_name: str, user_id: str
) -> None:
    with pytest.raises(ValueError):
        await service.create_session(app_name=app_name, user_id=user_id, session_id="a/b c")


def test_in_memory_is_the_reference() -> None:
    # The reference side really is ADK's: a guard against the fixture drifting.
    assert copy.copy(InMemorySessionService()).__class__.__module__.startswith("google.adk.")
