"""SDK items as Mnemo history messages, and session ids as conversation ids.

An item of the OpenAI Agents SDK (a message, a function call, its output, a
reasoning item...) is a JSON object, but Mnemo's ``message_json`` must be a
message with a ``role`` (system, user, assistant, tool) and a ``content``.
Each item is therefore stored in an envelope::

    {"role": "assistant", "content": "get_weather({\"city\": \"Paris\"})",
     "openai_agents_item": {"type": "function_call", "name": "get_weather", ...}}

``openai_agents_item`` is the item exactly as the SDK gave it (it comes back
equal); ``role`` and ``content`` are a readable projection, so that Mnemo's
text, search and any other client see what the item says. A message written by
another client (no envelope) is read back as a plain SDK message of its role
and text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mnemo.v1 import conversations_pb2 as cv

#: The envelope member holding the SDK's item.
ITEM_KEY = "openai_agents_item"
#: The readable projection is cut to this many characters (the item itself never is).
MAX_PROJECTION_CHARS = 4000

_SDK_ROLES = ("user", "assistant", "system")
_TEXT_KEYS = ("text", "refusal", "transcript")

_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")
_MAX_ID = 128


def conversation_id(session_id: str) -> str:
    """The Mnemo conversation id of an SDK session id.

    A session id that is a valid conversation id without ``~`` is used as it
    is. Any other is escaped: ``x~`` followed by the id with each character
    outside ``A-Z a-z 0-9 . _ : -`` as ``~HH`` per UTF-8 byte (``"a b"`` ->
    ``"x~a~20b"``); one whose escape is longer than 128 characters becomes
    ``h~`` and its SHA-256. Distinct session ids get distinct conversations.
    """
    if _VALID_ID.fullmatch(session_id):
        return session_id
    escaped = "x~" + "".join(
        char if char in _KEPT else "".join(f"~{byte:02X}" for byte in char.encode("utf-8"))
        for char in session_id
    )
    if len(escaped) <= _MAX_ID:
        return escaped
    return "h~" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def message_json(item: Mapping[str, Any]) -> str:
    """The envelope of ``item`` as compact UTF-8 JSON.

    Raises:
        TypeError: ``item`` is not a JSON object of JSON values.
        ValueError: it holds NaN or an infinity, which JSON cannot carry.
    """
    if not isinstance(item, Mapping):
        raise TypeError(f"a session item must be a JSON object, not {type(item).__name__}")
    envelope = {"role": _role(item), "content": _projection(item), ITEM_KEY: item}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def item(message: cv.HistoryMessage) -> Any:
    """The SDK item a stored message holds (see the module docstring)."""
    try:
        stored = json.loads(message.message_json)
    except ValueError:
        stored = None
    if isinstance(stored, dict) and isinstance(stored.get(ITEM_KEY), dict):
        return stored[ITEM_KEY]
    role = message.role if message.role in _SDK_ROLES else "assistant"
    return {"role": role, "content": message.text}


def _role(item: Mapping[str, Any]) -> str:
    role = item.get("role")
    if role in _SDK_ROLES:
        return str(role)
    if role == "developer":
        return "system"
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith("_output"):
        return "tool"
    return "assistant"


def _projection(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind == "function_call" or ("name" in item and "arguments" in item):
        text = f"{_text(item.get('name'))}({_text(item.get('arguments'))})"
    elif "content" in item:
        text = _text(item.get("content"))
    elif "output" in item:
        text = _text(item.get("output"))
    elif "summary" in item:
        text = _text(item.get("summary"))
    else:
        text = ""
    if not text and isinstance(kind, str):
        text = f"[{kind}]"
    if len(text) > MAX_PROJECTION_CHARS:
        text = text[: MAX_PROJECTION_CHARS - 1] + "…"
    return text


def _text(value: Any) -> str:
    """Plain text of a content value: strings, text-like parts, nested lists."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in _TEXT_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
        for key in ("image_url", "file_url", "filename"):
            if isinstance(value.get(key), str) and not str(value[key]).startswith("data:"):
                return str(value[key])
        return ""
    if isinstance(value, Iterable):
        return "\n".join(piece for piece in (_text(part) for part in value) if piece)
    return json.dumps(value)
