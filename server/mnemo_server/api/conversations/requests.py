"""ConversationService requests -> domain values: the conversation a request
names (authorized by the call's scope), the position a ListMessages token
resumes after, and metadata. Problems go to the request's ``Validator``; the
static rules are ``api.conversations.rules``'."""

from __future__ import annotations

from typing import Any

from mnemo_server.api import names, pagination
from mnemo_server.api.convert import metadata_from_struct
from mnemo_server.api.validation import MAX_POSITION, Validator
from mnemo_server.auth.caller import CallScope
from mnemo_server.domain.models import ConversationKey, JsonObject, Keyset

_NO_KEY = ConversationKey("", "")


def conversation_key(
    v: Validator, name: str, field: str, scope: CallScope | None
) -> ConversationKey:
    return v.attempt(lambda: names.parse_conversation(name, field, scope), _NO_KEY)


def message_position_keyset(keyset: Keyset | None) -> int | None:
    """The position a ListMessages token resumes after."""
    if keyset is None:
        return None
    if len(keyset) != 1 or not isinstance(keyset[0], int) or not 0 <= keyset[0] < MAX_POSITION:
        raise pagination.invalid_page_token()
    return keyset[0]


def metadata_of(v: Validator, holder: Any, field: str) -> JsonObject:
    """``holder.metadata`` as a JSON object (``{}`` when invalid)."""
    try:
        metadata = metadata_from_struct(holder.metadata)
    except ValueError:  # NaN and infinities have no JSON form
        v.invalid(field, "must hold JSON numbers only (no NaN or infinity)")
        return {}
    v.metadata(metadata, field)
    return metadata
