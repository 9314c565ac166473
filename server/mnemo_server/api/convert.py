"""What every service's conversion shares: timestamps, metadata, etags and
enum tables between the domain and mnemo.v1 protos.

Each service converts its own resources in its ``api/<service>/convert.py``
(pure functions; input protos are assumed validated: ``api.validation``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from mnemo_server.domain import models

E = TypeVar("E", bound=Enum)


def enum_mapping(domain: type[E], wire: Any, prefix: str, **renamed: str) -> dict[E, Any]:
    """Each member of the domain enum ``domain`` -> the value of the proto
    enum ``wire`` named ``prefix`` + the member's name (``renamed``: the wire
    names of members named otherwise). A member without a wire value fails at
    import, not in a call."""
    return {member: wire.Value(renamed.get(member.name, prefix + member.name)) for member in domain}


def expected_etag(etag: str) -> str | None:
    """A request's etag as a command's ``expected_etag``: empty on the wire
    means "unconditional" (``None``)."""
    return etag or None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def timestamp(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    """A datetime (naive means UTC) as a Timestamp (``None`` stays unset).
    Exact to the microsecond; computed here rather than by
    ``Timestamp.FromDatetime``, which costs several times as much."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    seconds, micros = divmod((value - _EPOCH) // _MICROSECOND, 1_000_000)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=micros * 1000)


def from_timestamp(value: timestamp_pb2.Timestamp) -> datetime:
    """A Timestamp as a UTC-aware datetime."""
    return value.ToDatetime(tzinfo=UTC)


def metadata_from_struct(value: struct_pb2.Struct) -> models.JsonObject:
    """A Struct as a plain JSON object (numbers become floats, as Struct holds them)."""
    result: models.JsonObject = json_format.MessageToDict(value)
    return result


def metadata_to_struct(value: models.JsonObject) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(value)
    return result


def set_timestamp(target: timestamp_pb2.Timestamp, value: datetime) -> None:
    """Set ``target`` (a message's Timestamp field, in place) to ``value``
    (naive means UTC): ``timestamp`` without the copy into the field."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    seconds, micros = divmod((value - _EPOCH) // _MICROSECOND, 1_000_000)
    target.seconds = seconds
    target.nanos = micros * 1000
