"""``MnemoSessionService``: ADK sessions as Mnemo conversations.

- A session is the conversation ``adk~{app}~{session}`` of its user
  (``conversation_id``); its events are the conversation's messages, each
  holding the ADK event as JSON (``_events``); its own state is a JSON string
  in the conversation's metadata (``adk_state_json``: JSON numbers stay as
  they were, a ``Struct`` would make every number a float).
- ``user:`` state is a document of the user, ``app:`` state the tenant's
  ``apps/{app}/state`` (``_state``); ``temp:`` state is never sent to the
  server. ``app:`` deltas are written first (a caller that may not write them,
  not an admin, fails before anything is stored), ``user:`` deltas after the
  event.
- Stale writers: a session read from Mnemo carries the conversation's etag.
  ``append_event`` raises ADK's ``StaleSessionError`` when the stored etag is
  no longer that one, when the conditional metadata write (etag) or the
  append (``expected_position``) loses a race.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.protobuf import json_format
from typing_extensions import override

import mnemo.client as mc
from mnemo.integrations.adk import _state
from mnemo.integrations.adk._client import ClientHolder
from mnemo.integrations.adk._events import app_prefix, conversation_id, event_message, message_event
from mnemo.v1 import conversations_pb2 as cv

STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
APP_KEY = "adk_app"
SESSION_KEY = "adk_session"
STATE_KEY = "adk_state_json"
#: Messages read per ListMessages page.
PAGE_SIZE = 1000


def _seconds(timestamp: Any) -> float:
    return float(timestamp.ToMicroseconds()) / 1_000_000


def _metadata(app_name: str, session_id: str, state: dict[str, Any]) -> dict[str, Any]:
    return {
        APP_KEY: app_name,
        SESSION_KEY: session_id,
        STATE_KEY: json.dumps(state, ensure_ascii=False, separators=(",", ":")),
    }


def _stored_state(conversation: cv.Conversation) -> dict[str, Any]:
    metadata = json_format.MessageToDict(conversation.metadata)
    text = metadata.get(STATE_KEY)
    state = json.loads(text) if isinstance(text, str) else {}
    return state if isinstance(state, dict) else {}


def _merged(app: dict[str, Any], user: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    merged = dict(session)
    merged.update({State.APP_PREFIX + k: v for k, v in app.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return merged


class MnemoSessionService(BaseSessionService):  # type: ignore[misc]  # (Any where mypy runs: pyproject.toml)
    """ADK's ``BaseSessionService`` over a Mnemo server.

    ``MnemoSessionService("mnemo:50051", token=...)``, or
    ``MnemoSessionService(uri="mnemo://mnemo:50051")`` (ADK's registry), or
    ``MnemoSessionService(client=async_client)`` with an ``AsyncMnemoClient``
    the caller owns. Other keyword arguments go to ``AsyncMnemoClient``.

    Each ADK user id is a Mnemo user id: the token must allow acting for it
    (its own user, or an admin of its tenant).

    Raises (from the methods, beside ADK's own errors):
        ValueError: an app name or session id Mnemo cannot hold in a
            conversation id (letters, digits, ``. _ : -``).
        mnemo.client.MnemoError: what the server answered otherwise
            (``PermissionDeniedError`` for an ``app:`` write without the
            admin role, ``FailedPreconditionError`` for
            withdrawn consent or memory switched off, ``InvalidArgumentError``
            for state over the metadata limit...).
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        uri: str | None = None,
        client: mc.AsyncMnemoClient | None = None,
        token: str | None = None,
        **client_options: Any,
    ) -> None:
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

    # -------------------------------------------------------------- state

    async def _scoped(self, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        app = await _state.read_app_state(self.client, app_name)
        user = await _state.read_state(self.client, user_id, app_name, _state.USER_STATE_KEY)
        return app, user

    async def _write_app(self, app_name: str, deltas: dict[str, dict[str, Any]]) -> None:
        if deltas["app"]:
            await _state.merge_app_state(self.client, app_name, deltas["app"])

    async def _write_user(
        self, app_name: str, user_id: str, deltas: dict[str, dict[str, Any]]
    ) -> None:
        if deltas["user"]:
            await _state.merge_state(
                self.client, user_id, app_name, _state.USER_STATE_KEY, deltas["user"]
            )

    def _session(
        self,
        conversation: cv.Conversation,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        state: dict[str, Any],
        events: list[Event] | None = None,
    ) -> Session:
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=state,
            events=events or [],
            last_update_time=_seconds(conversation.update_time),
        )
        session._storage_update_marker = conversation.etag
        return session

    # ------------------------------------------------------------ sessions

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create the session (its conversation) and apply ``state`` by scope.

        Raises:
            AlreadyExistsError: ``session_id`` is taken.
        """
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        name = conversation_id(app_name, session_id)
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        try:
            await self.client.get_conversation(user_id, name)
        except mc.NotFoundError:
            pass
        else:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        await self._write_app(app_name, deltas)
        try:
            conversation = await self.client.create_conversation(
                user_id, name, metadata=_metadata(app_name, session_id, deltas["session"])
            )
        except mc.AlreadyExistsError as error:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from error
        await self._write_user(app_name, user_id, deltas)
        app, user = await self._scoped(app_name, user_id)
        return self._session(
            conversation,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            state=_merged(app, user, deltas["session"]),
        )

    async def _events(
        self, user_id: str, name: str, count: int, config: GetSessionConfig | None
    ) -> list[Event]:
        recent = None if config is None else config.num_recent_events
        if recent == 0:
            return []
        start = 0 if recent is None else max(0, count - recent)
        pages = self.client.list_messages(user_id, name, start_position=start, page_size=PAGE_SIZE)
        events = [message_event(message.message_json) async for message in pages]
        after = None if config is None else config.after_timestamp
        if after is not None:
            events = [event for event in events if event.timestamp >= after]
        return events

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (``config``: the most recent ones, those
        at or after a timestamp) and its merged state; ``None`` if there is none."""
        session_id = session_id.strip() if session_id else session_id
        name = conversation_id(app_name, session_id)
        try:
            conversation = await self.client.get_conversation(user_id, name)
            events = await self._events(user_id, name, conversation.message_count, config)
        except mc.NotFoundError:
            return None
        app, user = await self._scoped(app_name, user_id)
        return self._session(
            conversation,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            state=_merged(app, user, _stored_state(conversation)),
            events=events,
        )

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The user's sessions of the app, without events, oldest update first.

        Raises:
            NotImplementedError: ``user_id`` is ``None``: Mnemo lists one
                user's conversations at a time, never every user's.
        """
        if user_id is None:
            raise NotImplementedError(
                "MnemoSessionService lists one user's sessions: pass user_id "
                "(Mnemo never lists every user's conversations)"
            )
        prefix = app_prefix(app_name)
        found = [
            conversation
            async for conversation in self.client.list_conversations(user_id, page_size=500)
            if conversation.name.rsplit("/", 1)[-1].startswith(prefix)
        ]
        app, user = await self._scoped(app_name, user_id)
        sessions = [
            self._session(
                conversation,
                app_name=app_name,
                user_id=user_id,
                session_id=conversation.name.rsplit("/", 1)[-1][len(prefix) :],
                state=_merged(app, user, _stored_state(conversation)),
            )
            for conversation in found
        ]
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and its events (nothing if there is none)."""
        try:
            await self.client.delete_conversation(user_id, conversation_id(app_name, session_id))
        except mc.NotFoundError:
            return

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state of the app, without the prefix (``{}`` if none)."""
        return await _state.read_state(self.client, user_id, app_name, _state.USER_STATE_KEY)

    # --------------------------------------------------------------- events

    async def _check_fresh(
        self, session: Session, conversation: cv.Conversation, name: str
    ) -> None:
        marker = session._storage_update_marker
        if marker is not None:
            if marker != conversation.etag:
                raise StaleSessionError(STALE_MESSAGE)
            return
        # A session not read from Mnemo (built by hand): stale when the stored
        # events went beyond the ones it holds, as DatabaseSessionService judges.
        count = conversation.message_count
        if count == 0:
            if session.events:
                raise StaleSessionError(STALE_MESSAGE)
            return
        last = await self.client.get_message(session.user_id, name, count - 1)
        if not session.events or message_event(last.message_json).id != session.events[-1].id:
            raise StaleSessionError(STALE_MESSAGE)

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` (not a partial one) and its state delta by scope.

        Raises:
            SessionNotFoundError: the session does not exist (any more).
            StaleSessionError: the session changed in Mnemo since ``session``
                was read (another writer appended or changed its state).
        """
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        deltas = _session_util.extract_json_safe_state_delta(event.actions.state_delta or {})
        user_id = session.user_id
        name = conversation_id(session.app_name, session.id)
        try:
            conversation = await self.client.get_conversation(user_id, name)
        except mc.NotFoundError as error:
            raise SessionNotFoundError(f"Session {session.id} not found.") from error
        await self._check_fresh(session, conversation, name)
        await self._write_app(session.app_name, deltas)
        position = conversation.message_count
        try:
            if deltas["session"]:
                state = _stored_state(conversation)
                state.update(deltas["session"])
                await self.client.update_conversation_metadata(
                    user_id,
                    name,
                    _metadata(session.app_name, session.id, state),
                    etag=conversation.etag,
                )
            appended = await self.client.append_messages(
                user_id, name, [event_message(event)], expected_position=position
            )
        except (mc.EtagMismatchError, mc.PositionMismatchError) as error:
            raise StaleSessionError(STALE_MESSAGE) from error
        except mc.NotFoundError as error:
            raise SessionNotFoundError(f"Session {session.id} not found.") from error
        await self._write_user(session.app_name, user_id, deltas)
        session.last_update_time = _seconds(appended.conversation.update_time)
        session._storage_update_marker = appended.conversation.etag
        return self._commit_event_to_session(session, event)
