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


def message_name(user: str, conversation: str, position: int) -> str:
    """``users/{user}/conversations/{conversation}/messages/{position}``."""
    return f"{conversation_name(user, conversation)}/messages/{position}"


def memory_state_name(user: str, conversation: str | None) -> str:
    """The working memory of ``conversation``; ``None`` or ``""`` is the default conversation."""
    if not conversation:
        return f"{user_name(user)}/memoryState"
    return f"{conversation_name(user, conversation)}/memoryState"


def _child_name(user: str, collection: str, child: str, field: str) -> str:
    """``users/{user}/{collection}/{child}``; ``child`` is an id or that very name."""
    parent = f"{user_name(user)}/{collection}/"
    return parent + _id(child.removeprefix(parent), field)


def memory_name(user: str, memory: str) -> str:
    """``users/{user}/memories/{memory}``; ``memory`` is an id or the entry's name."""
    return _child_name(user, "memories", memory, "memory")


def memory_candidate_name(user: str, candidate: str) -> str:
    """``users/{user}/memoryCandidates/{candidate}``; an id or the candidate's name."""
    return _child_name(user, "memoryCandidates", candidate, "candidate")
