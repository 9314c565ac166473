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

Speed: this runs on every write (a working memory's exchanges, the state of
each change, the idempotency record), so each class and each type is turned
into an encoding or decoding function once (cached) and the JSON text is
made by the standard library's C encoder. msgspec is about three times
faster still, but writes NaN as ``null`` and naive datetimes without a
zone, both of which this codec refuses (``docs/performance.md``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["CodecError", "Memo", "decode", "dumps", "encode", "loads"]

Encoder = Callable[[Any, "Memo | None"], Any]
Decoder = Callable[[Any], Any]

Memo = dict[int, tuple[object, Any]]
"""Plain data already encoded, by ``id`` of the (immutable) value: one write
encodes the same objects several times (a change's state, the idempotency
record of its result); a memo shared by those ``dumps`` encodes each once.
It keeps the values alive, so their ids stay theirs while it lives."""


class CodecError(ValueError):
    """The value cannot be encoded, or the JSON does not fit the type."""


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: object, memo: Memo | None = None) -> str:
    """Compact JSON text of ``value`` (no NaN or infinity); ``memo`` reuses
    what earlier calls with it encoded (dataclasses and tuples, which are
    immutable)."""
    return _JSON.encode(encode(value, memo))


def loads(tp: type[T], text: str) -> T:
    """Decode ``text`` (from ``dumps``) as an instance of ``tp``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    result: T = decode(tp, data)
    return result


# ------------------------------------------------------------------ encode


def encode(value: object, memo: Memo | None = None) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None)."""
    kind = type(value)
    encoder = _ENCODERS.get(kind)
    if encoder is None:
        encoder = _ENCODERS[kind] = _encoder_of(kind)
    return encoder(value, memo)


def _same(value: Any, memo: Memo | None = None) -> Any:
    return value


def _encode_datetime(value: datetime, memo: Memo | None) -> str:
    if value.tzinfo is not UTC:
        if value.tzinfo is None or value.utcoffset() is None:
            raise CodecError(f"naive datetime {value!r}: only timezone-aware datetimes are stored")
        value = value.astimezone(UTC)
    return value.isoformat(timespec="microseconds")


def _encode_list(value: list[Any], memo: Memo | None) -> list[Any]:
    return [encode(item, memo) for item in value]


def _encode_tuple(value: tuple[Any, ...], memo: Memo | None) -> list[Any]:
    if memo is None:
        return [encode(item) for item in value]
    found = memo.get(id(value))
    if found is not None:
        data: list[Any] = found[1]
        return data
    data = [encode(item, memo) for item in value]
    memo[id(value)] = (value, data)
    return data


def _encode_dict(value: dict[Any, Any], memo: Memo | None) -> dict[str, Any]:
    for key in value:
        if type(key) is not str:
            raise CodecError("only dicts with str keys can be encoded")
    return {key: encode(item, memo) for key, item in value.items()}


def _encoder_of(kind: type) -> Encoder:
    if kind is type(None) or kind in (str, bool, int, float):
        return _same
    if issubclass(kind, enum.Enum):
        return lambda value, memo: value.value
    if issubclass(kind, datetime):
        return _encode_datetime
    if dataclasses.is_dataclass(kind):
        return _dataclass_encoder(kind)
    if issubclass(kind, tuple):
        return _encode_tuple
    if issubclass(kind, list):
        return _encode_list
    if issubclass(kind, dict):
        return _encode_dict
    if issubclass(kind, str | int | float):  # subclasses (an enum is handled above)
        return _same

    def refuse(value: Any, memo: Memo | None) -> Any:
        raise CodecError(f"cannot encode a {type(value).__name__}")

    return refuse


_ENCODERS: dict[type, Encoder] = {}
# Field types whose values are JSON as they are (checked: a value of another
# type, which type hints cannot rule out at run time, takes the general path).
_PLAIN = (str, int, bool)


def _dataclass_encoder(kind: type) -> Encoder:
    """A function building the dict of an instance of ``kind``, written out
    field by field (as ``dataclasses`` writes ``__init__``)."""
    hints = typing.get_type_hints(kind)
    lines = [
        "def encode_dataclass(value, memo):",
        "    if memo is not None:",
        "        found = memo.get(id(value))",
        "        if found is not None:",
        "            return found[1]",
        "    data = {",
    ]
    for f in dataclasses.fields(kind):
        item = f"value.{f.name}"
        if hints.get(f.name) in _PLAIN:
            plain = hints[f.name].__name__
            lines.append(
                f"        {f.name!r}: {item} if type({item}) is {plain} else encode({item}, memo),"
            )
        else:
            lines.append(f"        {f.name!r}: encode({item}, memo),")
    lines += [
        "    }",
        "    if memo is not None:",
        "        memo[id(value)] = (value, data)",
        "    return data",
    ]
    namespace: dict[str, Any] = {"encode": encode}
    exec("\n".join(lines), namespace)
    encoder: Encoder = namespace["encode_dataclass"]
    return encoder


# ------------------------------------------------------------------ decode


def decode(tp: Any, data: Any) -> Any:
    """``data`` (plain JSON data) as an instance of the type ``tp``."""
    return _decoder(tp)(data)


def _decoder(tp: Any) -> Decoder:
    try:
        found = _DECODERS.get(tp)
    except TypeError:  # an unhashable type expression: not cached
        return _decoder_of(tp)
    if found is None:
        found = _DECODERS[tp] = _decoder_of(tp)
    return found


_DECODERS: dict[Any, Decoder] = {}


def _expecting(kind: type, tp: Any) -> Decoder:
    def check(data: Any) -> Any:
        if not isinstance(data, kind):
            raise CodecError(f"expected {tp}, got {type(data).__name__}")
        return data

    return check


def _decode_int(data: Any) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise CodecError(f"expected int, got {data!r}")
    return data


def _decode_float(data: Any) -> float:
    if isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if not isinstance(data, float):
        raise CodecError(f"expected float, got {type(data).__name__}")
    return data


def _decode_datetime(data: Any) -> datetime:
    if not isinstance(data, str):
        raise CodecError(f"expected datetime, got {type(data).__name__}")
    try:
        value = datetime.fromisoformat(data)
    except ValueError:
        raise CodecError(f"not an ISO 8601 datetime: {data!r}") from None
    if value.tzinfo is None:
        raise CodecError(f"datetime without a timezone: {data!r}")
    return value.astimezone(UTC)


def _decoder_of(tp: Any) -> Decoder:
    if tp is Any or tp is object:
        return _same
    if tp is type(None):
        return _expecting(type(None), tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if tp is datetime:
        return _decode_datetime
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_decoder(tp)
    if tp is float:
        return _decode_float
    if tp is int:
        return _decode_int
    if tp in (str, bool):
        return _expecting(tp, tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return _union_decoder(args)
    if origin is tuple:
        return _tuple_decoder(tp, args)
    if origin is list:
        item = _decoder(args[0])
        as_list = _expecting(list, tp)
        return lambda data: [item(value) for value in as_list(data)]
    if origin is dict:
        if args[0] is not str:
            raise CodecError(f"only dict[str, ...] can be decoded, not {tp}")
        value_of = _decoder(args[1])
        as_dict = _expecting(dict, tp)
        return lambda data: {key: value_of(item) for key, item in as_dict(data).items()}
    raise CodecError(f"cannot decode the type {tp!r}")


def _enum_decoder(tp: type[enum.Enum]) -> Decoder:
    def decode_enum(data: Any) -> Any:
        try:
            return tp(data)
        except ValueError:
            raise CodecError(f"{data!r} is not a {tp.__name__}") from None

    return decode_enum


def _tuple_decoder(tp: Any, args: tuple[Any, ...]) -> Decoder:
    as_list = _expecting(list, tp)
    if len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])
        return lambda data: tuple([item(value) for value in as_list(data)])
    decoders = [_decoder(arg) for arg in args]

    def fixed(data: Any) -> tuple[Any, ...]:
        items = as_list(data)
        if len(decoders) != len(items):
            raise CodecError(f"expected {len(decoders)} items for {tp}, got {len(items)}")
        return tuple(d(item) for d, item in zip(decoders, items, strict=True))

    return fixed


def _union_decoder(args: tuple[Any, ...]) -> Decoder:
    optional = type(None) in args
    choices = [_decoder(arg) for arg in args if arg is not type(None)]

    def decode_union(data: Any) -> Any:
        if data is None and optional:
            return None
        errors: list[str] = []
        for choice in choices:
            try:
                return choice(data)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError("; ".join(errors) or f"no type of the union fits {data!r}")

    return decode_union


def _dataclass_decoder(cls: Any) -> Decoder:
    # Resolved lazily: a dataclass may refer to itself, or to one defined later.
    fields: list[tuple[str, Decoder]] = []

    def decode_dataclass(data: Any) -> Any:
        if not isinstance(data, dict):
            raise CodecError(f"expected {cls}, got {type(data).__name__}")
        if not fields:
            hints = typing.get_type_hints(cls)
            fields.extend(
                (f.name, _decoder(hints[f.name])) for f in dataclasses.fields(cls) if f.init
            )
        kwargs = {name: d(data[name]) for name, d in fields if name in data}
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise CodecError(f"cannot build {cls.__name__}: {exc}") from None

    return decode_dataclass
