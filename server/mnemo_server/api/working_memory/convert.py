"""Working memory domain objects <-> mnemo.v1 protos (``MemoryState``,
``Exchange``). Pure functions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mnemo.v1 import working_memory_pb2
from mnemo_server.api import names
from mnemo_server.api.convert import from_timestamp, set_timestamp
from mnemo_server.domain import models


def exchange_from_proto(value: working_memory_pb2.Exchange, now: datetime) -> models.Exchange:
    """``at`` unset -> ``now`` (the server stamps the time)."""
    at = from_timestamp(value.at) if value.HasField("at") else now
    return models.Exchange(ask=value.ask, answer=value.answer, at=at)


def add_exchanges(target: Any, values: tuple[models.Exchange, ...]) -> None:
    """Add each exchange to ``target``, a repeated ``Exchange`` field (in place)."""
    for value in values:
        set_timestamp(target.add(ask=value.ask, answer=value.answer).at, value.at)


def fill_memory_state(
    target: working_memory_pb2.MemoryState, key: models.ConversationKey, state: models.MemoryState
) -> None:
    """Set the fields of ``target`` (a response's own ``MemoryState``, in place)."""
    target.name = names.memory_state_name(key)
    target.summary = state.summary
    add_exchanges(target.recent, state.recent)
    target.etag = state.etag
    if state.update_time is not None:
        set_timestamp(target.update_time, state.update_time)


def memory_state_to_proto(
    key: models.ConversationKey, state: models.MemoryState
) -> working_memory_pb2.MemoryState:
    made = working_memory_pb2.MemoryState()
    fill_memory_state(made, key, state)
    return made
