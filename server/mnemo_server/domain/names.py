"""Resource names, formatted (parsing is the API edge's: ``api.names``).

The store names resources in its errors (``etag_mismatch(name)``,
``NotFound``) the same way the API names them in responses.
"""

from __future__ import annotations

from mnemo_server.domain.models import ConversationKey


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
