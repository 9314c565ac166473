"""Resource names: parse at the edge, format on the way out.

``users/{user}``, ``users/{user}/memoryState`` (the default conversation's
working memory), ``users/{user}/conversations/{conversation}``,
``.../conversations/{conversation}/memoryState``,
``.../messages/{position}`` and ``.../failedRuns/{failed_run}``.

An id is 1-128 characters of ``A-Z a-z 0-9 . _ ~ : -`` starting with a letter
or digit (the domain's rule, ``domain.names.ID_PATTERN``). A malformed name
raises ``InvalidArgument`` with reason ``INVALID_NAME``, metadata ``field``
and one field violation for it.

Authorization happens here, where every user id leaves a name: a well-formed
name of a user the authenticated caller may not act for raises ``NotFound``
for the name, exactly as for a resource that does not exist
(``auth.access.check_user``; nothing under ``--auth none``). The call's
``CallScope`` (``None`` under ``--auth none``) is an argument of every parser:
a servicer reads it once (``auth.caller.current_scope``) and passes it on.
"""

from __future__ import annotations

import re

from mnemo_server.auth.access import check_user
from mnemo_server.auth.caller import CallScope
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.models import DEFAULT_CONVERSATION, ConversationKey
from mnemo_server.domain.names import ID_CHARACTERS as ID_CHARACTERS
from mnemo_server.domain.names import ID_PATTERN as ID_PATTERN
from mnemo_server.domain.names import conversation_name as conversation_name
from mnemo_server.domain.names import failed_run_name as failed_run_name
from mnemo_server.domain.names import is_valid_id as is_valid_id
from mnemo_server.domain.names import memory_state_name as memory_state_name
from mnemo_server.domain.names import message_name as message_name
from mnemo_server.domain.names import user_name as user_name

_USER = re.compile(rf"users/({ID_PATTERN})")
_CONVERSATION = re.compile(rf"users/({ID_PATTERN})/conversations/({ID_PATTERN})")
_MESSAGE = re.compile(
    rf"users/({ID_PATTERN})/conversations/({ID_PATTERN})/messages/(0|[1-9][0-9]{{0,9}})"
)
_DEFAULT_STATE = re.compile(rf"users/({ID_PATTERN})/memoryState")
_NAMED_STATE = re.compile(rf"users/({ID_PATTERN})/conversations/({ID_PATTERN})/memoryState")

USER_PATTERN = "users/{user}"
CONVERSATION_PATTERN = "users/{user}/conversations/{conversation}"
MESSAGE_PATTERN = "users/{user}/conversations/{conversation}/messages/{position}"
MEMORY_STATE_PATTERN = (
    "users/{user}/memoryState or users/{user}/conversations/{conversation}/memoryState"
)
_SHOWN_CHARS = 80
ID_RULE = f"each id {ID_CHARACTERS}"


def invalid_name(value: str, field: str, expected: str) -> InvalidArgument:
    """The error for a ``field`` whose value does not match ``expected``."""
    problem = "is required" if not value else f"{_shown(value)} does not match {expected}"
    return InvalidArgument(
        f"{field} {problem}; expected {expected}, {ID_RULE}",
        reason="INVALID_NAME",
        metadata={"field": field},
        violations=(FieldViolation(field, f"must be a name like {expected}, {ID_RULE}"),),
    )


def _shown(value: str) -> str:
    if len(value) > _SHOWN_CHARS:
        value = value[:_SHOWN_CHARS] + "..."
    return repr(value)


def owned_ids(
    value: str, field: str, pattern: re.Pattern[str], expected: str, scope: CallScope | None
) -> tuple[str, ...]:
    """The ids a name of ``pattern`` holds, the user's first, once the
    caller of ``scope`` may act for that user. Raises ``INVALID_NAME`` or
    ``NotFound``."""
    match = pattern.fullmatch(value)
    if match is None:
        raise invalid_name(value, field, expected)
    check_user(scope, match.group(1), value)
    return match.groups()


def parse_user(value: str, field: str, scope: CallScope | None) -> str:
    """``users/{user}`` -> the user id."""
    return owned_ids(value, field, _USER, USER_PATTERN, scope)[0]


def parse_conversation(value: str, field: str, scope: CallScope | None) -> ConversationKey:
    """``users/{user}/conversations/{conversation}`` -> its key (never the default)."""
    user_id, conversation_id = owned_ids(value, field, _CONVERSATION, CONVERSATION_PATTERN, scope)
    return ConversationKey(user_id, conversation_id)


def parse_message(value: str, field: str, scope: CallScope | None) -> tuple[ConversationKey, int]:
    """``users/{user}/conversations/{conversation}/messages/{position}`` -> the
    conversation's key and the position (decimal, no leading zero)."""
    user_id, conversation_id, position = owned_ids(value, field, _MESSAGE, MESSAGE_PATTERN, scope)
    return ConversationKey(user_id, conversation_id), int(position)


def parse_memory_state(value: str, field: str, scope: CallScope | None) -> ConversationKey:
    """A working-memory name -> its conversation key (``conversation_id == ""``
    for ``users/{user}/memoryState``, the default conversation)."""
    if _DEFAULT_STATE.fullmatch(value):
        user_id = owned_ids(value, field, _DEFAULT_STATE, "", scope)[0]
        return ConversationKey(user_id, DEFAULT_CONVERSATION)
    user_id, conversation_id = owned_ids(value, field, _NAMED_STATE, MEMORY_STATE_PATTERN, scope)
    return ConversationKey(user_id, conversation_id)
