"""A small JSON codec for the frozen domain dataclasses.

``dumps(value)`` writes a dataclass (or a tuple, list or dict of them) as
compact JSON; ``loads(SomeType, text)`` reads it back into the same type. The
type hints of the dataclass fields drive decoding (``dataclasses.fields`` +
``typing.get_type_hints``), so nothing is registered by hand. Supported:
dataclasses (nested), ``tuple[X, ...]``, ``tuple[X, Y]``, ``list[X]``,
``dict[str, X]``, ``X | None``, ``Any`` (kept as decoded JSON), ``str``,
``int``, ``float``, ``bool``, ``None``, enums (by value) and timezone-aware ``datetime`` (an ISO
8601 string in UTC, microsecond precision: it round-trips exactly).

Decoding ignores unknown keys (a result recorded by a newer server still
reads) and takes dataclass defaults for missing ones; any other mismatch raises
``CodecError``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["CodecError", "decode", "dumps", "encode", "loads"]


class CodecError(ValueError):
    """The value cannot be encoded, or the JSON does not fit the type."""


def dumps(value: object) -> str:
    """Compact JSON text of ``value`` (no NaN or infinity)."""
    return json.dumps(encode(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(tp: type[T], text: str) -> T:
    """Decode ``text`` (from ``dumps``) as an instance of ``tp``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    result: T = decode(tp, data)
    return result


def encode(value: object) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise CodecError(f"naive datetime {value!r}: only timezone-aware datetimes are stored")
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise CodecError("only dicts with str keys can be encoded")
        return {key: encode(item) for key, item in value.items()}
    raise CodecError(f"cannot encode a {type(value).__name__}")


def decode(tp: Any, data: Any) -> Any:
    """``data`` (plain JSON data) as an instance of the type ``tp``."""
    if tp is Any or tp is object:
        return data
    if tp is type(None):
        return _expect(data, type(None), tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data)
    if tp is datetime:
        return _decode_datetime(data)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise CodecError(f"{data!r} is not a {tp.__name__}") from None
    if tp is float:
        if isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        return _expect(data, float, tp)
    if tp is int:
        if isinstance(data, bool):
            raise CodecError(f"expected int, got {data!r}")
        return _expect(data, int, tp)
    if tp in (str, bool):
        return _expect(data, tp, tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return _decode_union(args, data)
    if origin is tuple:
        items = _expect(data, list, tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], item) for item in items)
        if len(args) != len(items):
            raise CodecError(f"expected {len(args)} items for {tp}, got {len(items)}")
        return tuple(decode(arg, item) for arg, item in zip(args, items, strict=True))
    if origin is list:
        return [decode(args[0], item) for item in _expect(data, list, tp)]
    if origin is dict:
        if args[0] is not str:
            raise CodecError(f"only dict[str, ...] can be decoded, not {tp}")
        return {key: decode(args[1], item) for key, item in _expect(data, dict, tp).items()}
    raise CodecError(f"cannot decode the type {tp!r}")


def _expect(data: Any, kind: type, tp: Any) -> Any:
    if not isinstance(data, kind):
        raise CodecError(f"expected {tp}, got {type(data).__name__}")
    return data


def _decode_union(args: tuple[Any, ...], data: Any) -> Any:
    if data is None and type(None) in args:
        return None
    errors: list[str] = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return decode(arg, data)
        except CodecError as exc:
            errors.append(str(exc))
    raise CodecError("; ".join(errors) or f"no type of the union fits {data!r}")


def _decode_datetime(data: Any) -> datetime:
    text = _expect(data, str, datetime)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise CodecError(f"not an ISO 8601 datetime: {text!r}") from None
    if value.tzinfo is None:
        raise CodecError(f"datetime without a timezone: {text!r}")
    return value.astimezone(UTC)


@functools.cache
def _field_types(cls: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _decode_dataclass(cls: Any, data: Any) -> Any:
    obj = _expect(data, dict, cls)
    kwargs = {name: decode(tp, obj[name]) for name, tp in _field_types(cls).items() if name in obj}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise CodecError(f"cannot build {cls.__name__}: {exc}") from None
