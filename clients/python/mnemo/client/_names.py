"""Resource names from the ids a caller passes.

The server validates ids; the client only refuses a ``/`` inside one, which
would otherwise silently address a different resource
(``user="u1/conversations/c2"``).
"""

from __future__ import annotations

from mnemo.client.errors import FieldViolation, InvalidArgumentError


def _id(value: str, field: str) -> str:
    if "/" in value:
        raise InvalidArgumentError(
            f"{field} {value!r} must be an id, not a path: it contains '/'",
            reason="INVALID_NAME",
            metadata={"field": field},
            field_violations=[FieldViolation(field, "must not contain '/'")],
        )
    return value


def user_name(user: str) -> str:
    """``users/{user}``."""
    return f"users/{_id(user, 'user')}"


def conversation_name(user: str, conversation: str) -> str:
    """``users/{user}/conversations/{conversation}``."""
    return f"{user_name(user)}/conversations/{_id(conversation, 'conversation')}"


def memory_state_name(user: str, conversation: str | None) -> str:
    """The working memory of ``conversation``; ``None`` or ``""`` is the default conversation."""
    if not conversation:
        return f"{user_name(user)}/memoryState"
    return f"{conversation_name(user, conversation)}/memoryState"
