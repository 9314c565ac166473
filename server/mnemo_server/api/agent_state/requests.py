"""AgentStateService requests -> domain values: the app a request names
(``apps/{app}/state``) and the JSON object of a delta. Problems go to the
request's ``Validator``."""

from __future__ import annotations

import re
from typing import Any

from mnemo_server.api.names import ID_PATTERN, invalid_name
from mnemo_server.api.validation import Validator
from mnemo_server.domain.app_state import MAX_STATE_BYTES
from mnemo_server.domain.messages import loads_strict

_APP_STATE = re.compile(rf"apps/({ID_PATTERN})/state")
APP_STATE_PATTERN = "apps/{app}/state"


def app_of(v: Validator, name: str) -> str:
    match = _APP_STATE.fullmatch(name)
    if match is None:
        v.add(invalid_name(name, "name", APP_STATE_PATTERN))
        return ""
    return match.group(1)


def delta_of(v: Validator, delta_json: str) -> dict[str, Any]:
    field = "delta_json"
    if not delta_json:
        v.invalid(field, "is required")
        return {}
    v.max_bytes(delta_json, field, MAX_STATE_BYTES)
    try:
        delta = loads_strict(delta_json)
    except ValueError:
        delta = None
    if not isinstance(delta, dict):
        v.invalid(field, "must be a JSON object")
        return {}
    return delta
