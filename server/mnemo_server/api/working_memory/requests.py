"""WorkingMemoryService requests -> domain values: the memory state a
request names (authorized by the call's scope). The static and settings
rules are ``api.working_memory.rules``'."""

from __future__ import annotations

from mnemo_server.api import names
from mnemo_server.api.validation import Validator
from mnemo_server.auth.caller import CallScope
from mnemo_server.domain.models import ConversationKey

_NO_KEY = ConversationKey("", "")


def state_key(v: Validator, name: str, field: str, scope: CallScope | None) -> ConversationKey:
    return v.attempt(lambda: names.parse_memory_state(name, field, scope), _NO_KEY)
