"""Resource names, formatted (parsing is the API edge's: ``api.names``), and the id rule.

The store names resources in its errors (``etag_mismatch(name)``,
``NotFound``) the same way the API names them in responses. An id (of a
user, tenant, conversation, memory, ...) is 1-128 characters of
``A-Z a-z 0-9 . _ ~ : -`` starting with a letter or digit, wherever it comes
from: a resource name (``api.names``) or a bearer token's claims (``auth.jwt``).
"""

from __future__ import annotations

import re

from mnemo_server.domain.models import ConversationKey

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._~:-]{0,127}"
ID_CHARACTERS = "1-128 characters of A-Z a-z 0-9 . _ ~ : - starting with a letter or digit"
"""``ID_PATTERN`` in words, for the errors that refuse an id."""
_ID = re.compile(ID_PATTERN)


def is_valid_id(value: str) -> bool:
    """Whether ``value`` is an id (``ID_PATTERN``, the whole of it)."""
    return _ID.fullmatch(value) is not None


def user_name(user_id: str) -> str:
    return f"users/{user_id}"


def conversation_name(key: ConversationKey) -> str:
    return f"users/{key.user_id}/conversations/{key.conversation_id}"


def memory_state_name(key: ConversationKey) -> str:
    if key.is_default:
        return f"users/{key.user_id}/memoryState"
    return f"{conversation_name(key)}/memoryState"


def message_name(key: ConversationKey, position: int) -> str:
    return f"{conversation_name(key)}/messages/{position}"


def failed_run_name(key: ConversationKey, failed_run_id: str) -> str:
    return f"{conversation_name(key)}/failedRuns/{failed_run_id}"


def memory_name(user_id: str, memory_id: str) -> str:
    return f"{user_name(user_id)}/memories/{memory_id}"


def memory_candidate_name(user_id: str, candidate_id: str) -> str:
    return f"{user_name(user_id)}/memoryCandidates/{candidate_id}"
