"""``MnemoSessionService`` under ``--auth jwt``: ``app:`` state is written by
the tenant's admins only and read by all its users; ``user:`` state stays the
user's."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

import mnemo.client as mc
from mnemo.integrations.adk import MnemoSessionService


def event(delta: dict[str, object]) -> Event:
    return Event(
        invocation_id="inv",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text="ok")]),
        actions=EventActions(state_delta=delta),
    )


async def test_app_state_needs_an_admin(jwt_server: Any) -> None:
    server = jwt_server
    admin = MnemoSessionService(server.target, token=server.token("ops", admin=True))
    alice = MnemoSessionService(server.target, token=server.token("alice"))
    bob = MnemoSessionService(server.target, token=server.token("bob"))
    await admin.create_session(app_name="shop", user_id="ops", state={"app:motd": "hello"})
    session = await alice.create_session(
        app_name="shop", user_id="alice", state={"user:name": "Alice"}
    )
    assert session.state == {"app:motd": "hello", "user:name": "Alice"}
    with pytest.raises(mc.PermissionDeniedError):
        await alice.append_event(session, event({"app:motd": "pwned", "s": 1}))
    stored = await alice.get_session(app_name="shop", user_id="alice", session_id=session.id)
    assert stored is not None
    assert stored.events == [] and stored.state == {"app:motd": "hello", "user:name": "Alice"}
    with pytest.raises(mc.PermissionDeniedError):
        await alice.create_session(app_name="shop", user_id="alice", state={"app:x": 1})
    await alice.append_event(stored, event({"s": 2, "user:name": "Al"}))
    theirs = await bob.create_session(app_name="shop", user_id="bob")
    assert theirs.state == {"app:motd": "hello"}
    with pytest.raises(mc.NotFoundError):  # another user's sessions: not even their existence
        await bob.list_sessions(app_name="shop", user_id="alice")
    for service in (admin, alice, bob):
        await service.close()
