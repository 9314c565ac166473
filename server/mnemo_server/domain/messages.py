"""SDK-native history messages: validation and plain-text projection.

A message is an Anvia-shaped JSON object::

    {"role": "assistant",
     "content": [{"type": "text", "text": "Let me check."},
                 {"type": "tool-call", "toolCallId": "c1", "toolName": "weather",
                  "input": {"city": "Paris"}}],
     "metadata": {"model": "m1"}}

- ``role`` is one of system, user, assistant, tool;
- ``content`` is a string or a list of parts, each an object with a non-empty
  string ``type``; a ``text`` part needs a string ``text``;
- ``metadata``, when present, is an object; any other member is allowed.

Part types other than text, image, file, tool-call and tool-result are
accepted and stored, so that a newer SDK's messages are not refused by an
older server; they only contribute nothing to the text projection. The
message is stored verbatim (``NewMessage.message_json`` is the caller's
string, byte for byte); only the role and the projection are derived.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mnemo_server.domain.models import NewMessage

ROLES = ("system", "user", "assistant", "tool")

# Member names the SDKs use for the same thing, in order of preference.
_TOOL_NAME = ("toolName", "name")
_TOOL_INPUT = ("input", "args", "arguments")
_TOOL_OUTPUT = ("output", "result", "content")
_FILE_NAME = ("filename", "name")
_LOCATION = ("url", "image", "data")
_URL_SCHEMES = ("http://", "https://", "gs://", "s3://", "file://")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def loads_strict(text: str) -> Any:
    """``json.loads`` without NaN/Infinity; too-deep nesting is a ``ValueError``."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


class MessageProblem(ValueError):
    """What is wrong with an SDK-native message (``str()``: ``is required``,
    ``must be a JSON object``, ...). The API layer reports it as
    ``INVALID_MESSAGE`` for the request's field (``api.validation``)."""


def parse_message(message_json: str) -> NewMessage:
    """Validate one message and derive its role and text projection.

    Raises ``MessageProblem``.
    """
    if not message_json:
        raise MessageProblem("is required")
    try:
        message = loads_strict(message_json)
    except ValueError as exc:
        raise MessageProblem(f"is not valid JSON ({exc})") from None
    if not isinstance(message, dict):
        raise MessageProblem("must be a JSON object")
    role = message.get("role")
    if role not in ROLES:
        raise MessageProblem(f"role must be one of {', '.join(ROLES)} (got {role!r:.40})")
    content = message.get("content")
    if not isinstance(content, str | list):
        raise MessageProblem("content must be a string or a list of parts")
    if isinstance(content, list):
        for index, part in enumerate(content):
            problem = _part_problem(part)
            if problem:
                raise MessageProblem(f"content[{index}] {problem}")
    if "metadata" in message and not isinstance(message["metadata"], dict):
        raise MessageProblem("metadata must be an object")
    return NewMessage(message_json=message_json, role=role, text=project_text(message))


def _part_problem(part: Any) -> str:
    if not isinstance(part, dict):
        return "must be an object with a string type"
    part_type = part.get("type")
    if not isinstance(part_type, str) or not part_type:
        return "must have a non-empty string type"
    if part_type == "text" and not isinstance(part.get("text"), str):
        return "is a text part without a string text"
    return ""


# ---------------------------------------------------------------- projection


def project_text(message: dict[str, Any]) -> str:
    """The plain text a reader (or a search index) sees in a message.

    String content and text parts verbatim; tool calls as ``name(arguments)``;
    tool results' outputs; files and images by name and URL (inline data is
    skipped). Top-level ``toolCalls``/``tool_calls`` lists count as tool calls.
    """
    pieces = [*_content_text(message.get("content"))]
    for key in ("toolCalls", "tool_calls"):
        calls = message.get(key)
        if isinstance(calls, list):
            pieces.extend(_tool_call_text(call) for call in calls if isinstance(call, dict))
    text = "\n".join(piece for piece in pieces if piece)
    # Storable everywhere: no NUL (PostgreSQL text), no lone surrogates (UTF-8).
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _content_text(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                yield _part_text(part)


def _part_text(part: dict[str, Any]) -> str:
    part_type = part.get("type")
    if part_type == "text":
        return str(part.get("text", ""))
    if part_type == "tool-call":
        return _tool_call_text(part)
    if part_type == "tool-result":
        output = _first(part, _TOOL_OUTPUT)
        if isinstance(output, list):
            return "\n".join(_content_text(output))
        return _as_text(output)
    if part_type in ("file", "image"):
        name = _first(part, _FILE_NAME)
        location = _first(part, _LOCATION)
        url = location if isinstance(location, str) and location.startswith(_URL_SCHEMES) else None
        return " ".join(str(x) for x in (name, url) if isinstance(x, str) and x)
    return ""


def _tool_call_text(call: dict[str, Any]) -> str:
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    name = _as_text(_first(source, _TOOL_NAME))
    arguments = _as_text(_first(source, _TOOL_INPUT))
    return f"{name}({arguments})" if name or arguments else ""


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
