"""ADK events as Mnemo history messages, and (app, session) as conversation ids.

Each event is stored in an envelope::

    {"role": "user", "content": "Hello", "adk_event": {...the Event as JSON...}}

``adk_event`` is ``Event.model_dump(mode="json", exclude_none=True)``, read
back with ``Event.model_validate`` (equal to what was appended); ``role``
(``user`` for the user's events, ``assistant`` for any agent's) and
``content`` (the text of its parts) are a readable projection for Mnemo's
search, context and other clients.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.adk.events.event import Event

EVENT_KEY = "adk_event"
"""The member of a history message holding the ADK event."""

#: What ADK names may hold so that the conversation id stays a Mnemo id.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_PREFIX = "adk~"
MAX_CONVERSATION_ID = 128


def check_name(value: str, what: str) -> str:
    """``value`` when it can be part of a conversation id.

    Raises:
        ValueError: it is empty or holds characters other than ``A-Z a-z 0-9 . _ : -``
            (or does not start with a letter or digit).
    """
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r:.80} must be letters, digits and . _ : - "
            "(starting with a letter or digit) to be stored in Mnemo"
        )
    return value


def conversation_id(app_name: str, session_id: str) -> str:
    """The Mnemo conversation id of ADK session ``session_id`` of ``app_name``.

    Raises:
        ValueError: a name Mnemo cannot hold (see ``check_name``) or an id
            over 128 characters in all.
    """
    result = f"{_PREFIX}{check_name(app_name, 'app_name')}~{check_name(session_id, 'session_id')}"
    if len(result) > MAX_CONVERSATION_ID:
        raise ValueError(
            f"app_name and session_id are too long together ({len(result)} > "
            f"{MAX_CONVERSATION_ID} characters with the 'adk~' prefix)"
        )
    return result


def app_prefix(app_name: str) -> str:
    """The prefix of the conversation ids of ``app_name``'s sessions."""
    return f"{_PREFIX}{check_name(app_name, 'app_name')}~"


def event_text(event: Event) -> str:
    """The text parts of an event, one per line."""
    if event.content is None or not event.content.parts:
        return ""
    return "\n".join(part.text for part in event.content.parts if part.text)


def event_message(event: Event) -> str:
    """The history message (JSON) that stores ``event``."""
    envelope: dict[str, Any] = {
        "role": "user" if event.author == "user" else "assistant",
        "content": event_text(event),
        EVENT_KEY: event.model_dump(mode="json", exclude_none=True),
    }
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def message_event(message_json: str) -> Event:
    """The ADK event a history message holds; a message another client wrote
    (no envelope) reads as an event of its role (author ``user`` or
    ``mnemo``) with its text.

    Raises:
        ValueError: the message is not a JSON object.
    """
    message = json.loads(message_json)
    if not isinstance(message, dict):
        raise ValueError("a history message must be a JSON object")
    stored = message.get(EVENT_KEY)
    if isinstance(stored, dict):
        return Event.model_validate(stored)
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    role = "user" if message.get("role") == "user" else "model"
    return Event.model_validate(
        {
            "author": "user" if role == "user" else "mnemo",
            "content": {"role": role, "parts": [{"text": text}]},
        }
    )
