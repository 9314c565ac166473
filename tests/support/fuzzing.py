"""Hypothesis strategies for any protobuf message, built from its descriptor.

``message_strategy(descriptor)`` generates messages of that type with any
subset of their fields set: strings with odd unicode, resource-name-like
strings JSON-like texts and
the occasional huge one. Name fields (``name``, ``parent``, ``conversation``,
``*_name``) mostly get a valid name of user ``u1`` and ``message_json`` mostly
a valid message, so that requests also reach the code behind validation; integers of the field's full range and its extremes;
floats including NaN and infinities; enum numbers known and unknown; nested
messages (depth-bounded), repeated fields and maps.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

from tests.support.rpcs import is_name_field

T = TypeVar("T")

MAX_DEPTH = 4
MAX_REPEATED = 4
HUGE_CHARS = 70_000
"""Above every text limit (64 KiB), far below the request limit (4 MiB)."""

_T = FieldDescriptor
_INT_RANGES = {
    _T.TYPE_INT32: (-(2**31), 2**31 - 1),
    _T.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _T.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    _T.TYPE_INT64: (-(2**63), 2**63 - 1),
    _T.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _T.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _T.TYPE_UINT32: (0, 2**32 - 1),
    _T.TYPE_FIXED32: (0, 2**32 - 1),
    _T.TYPE_UINT64: (0, 2**64 - 1),
    _T.TYPE_FIXED64: (0, 2**64 - 1),
}


def weighted(*choices: tuple[int, st.SearchStrategy[T]]) -> st.SearchStrategy[T]:
    """One of the strategies, picked in proportion to its weight (``st.one_of``
    lets Hypothesis favor whichever branch it likes)."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(table).flatmap(lambda strategy: strategy)


ODD_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
IDS = st.one_of(
    st.sampled_from(["u1", "u2", "c1", "m1", "k1", "0", "1", "x", "-1", "a" * 129]),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._~:-]{0,12}", fullmatch=True),
    ODD_TEXT,
)
SEGMENTS = st.sampled_from(
    [
        "users",
        "conversations",
        "memoryState",
        "memories",
        "memoryCandidates",
        "messages",
        "failedRuns",
    ]
)
VALID_NAMES = st.sampled_from(
    [
        "users/u1",
        "users/u1/memoryState",
        "users/u1/conversations/c1",
        "users/u1/conversations/c1/memoryState",
        "users/u1/memories/m1",
        "users/u1/memoryCandidates/k1",
        "users/u2",
        "users/u2/conversations/c2",
    ]
)
NAMES = st.one_of(
    VALID_NAMES,
    st.lists(st.one_of(SEGMENTS, IDS), min_size=1, max_size=6).map("/".join),
    st.builds(lambda a, b: f"users/{a}/conversations/{b}", IDS, IDS),
)
JSONISH = st.one_of(
    st.sampled_from(["", "{}", "null", "[1,2]", '{"a":', "NaN", '{"role":"user"}']),
    st.builds(
        lambda role, content: json.dumps({"role": role, "content": content}),
        st.sampled_from(["user", "assistant", "system", "tool", "", "x"]),
        st.one_of(ODD_TEXT, st.integers(), st.none(), st.lists(ODD_TEXT, max_size=2)),
    ),
)
VALID_MESSAGES = st.builds(
    lambda role, content: json.dumps({"role": role, "content": content}),
    st.sampled_from(["user", "assistant"]),
    ODD_TEXT,
)
STRINGS = weighted(
    (6, ODD_TEXT), (1, NAMES), (1, JSONISH), (1, st.just("x" * HUGE_CHARS)), (1, st.just("\x00"))
)


def _mostly(valid: list[str]) -> st.SearchStrategy[str]:
    return weighted((7, st.sampled_from(valid)), (1, NAMES), (2, STRINGS))


NAME_VALUES = {
    "parent": _mostly(["users/u1", "users/u1/conversations/c1"]),
    "conversation": _mostly(["users/u1/conversations/c1", "users/u1/conversations/c2"]),
}
ANY_NAME_VALUES = weighted((7, VALID_NAMES), (1, NAMES), (2, STRINGS))
MESSAGE_JSON_VALUES = weighted((6, VALID_MESSAGES), (2, JSONISH), (2, STRINGS))


def _string(field: FieldDescriptor) -> st.SearchStrategy[str]:
    if is_name_field(field):
        return NAME_VALUES.get(field.name, ANY_NAME_VALUES)
    if field.name == "message_json":
        return MESSAGE_JSON_VALUES
    return STRINGS


def _always_set(descriptor: Descriptor, depth: int) -> set[str]:
    """The name fields a request almost always has: ``name`` and ``parent``, or
    a request's first name field when it has neither (``conversation``)."""
    names = [f.name for f in descriptor.fields if is_name_field(f)]
    main = {n for n in names if n in ("name", "parent")}
    if not main and depth == 0 and names:
        main = {names[0]}
    return main


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return st.one_of(
            st.sampled_from([0, 1, -1 if low < 0 else 2, low, high]), st.integers(low, high)
        )
    if kind == _T.TYPE_DOUBLE:
        return st.floats()
    if kind == _T.TYPE_FLOAT:
        return st.floats(width=32)
    if kind == _T.TYPE_BOOL:
        return st.booleans()
    if kind == _T.TYPE_STRING:
        return _string(field)
    if kind == _T.TYPE_BYTES:
        return st.binary(max_size=64)
    if kind == _T.TYPE_ENUM:
        assert field.enum_type is not None
        known = [v.number for v in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-(2**31), 2**31 - 1))
    raise AssertionError(f"no strategy for field type {kind} of {field.full_name}")


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.type == _T.TYPE_MESSAGE:
        assert field.message_type is not None
        return message_strategy(field.message_type, depth + 1)
    return _scalar(field)


def _field(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        key = _scalar(message_type.fields_by_name["key"])
        value = _value(message_type.fields_by_name["value"], depth)
        return st.dictionaries(key, value, max_size=MAX_REPEATED)
    if field.is_repeated:
        return st.lists(_value(field, depth), max_size=MAX_REPEATED)
    return _value(field, depth)


def _assign(message: Message, field: FieldDescriptor, value: Any) -> None:
    target = getattr(message, field.name, None)
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        value_field = message_type.fields_by_name["value"]
        for key, item in value.items():
            if value_field.type == _T.TYPE_MESSAGE:
                target[key].CopyFrom(item)  # type: ignore[index]
            else:
                target[key] = item  # type: ignore[index]
    elif field.is_repeated:
        target.extend(value)  # type: ignore[union-attr]
    elif field.type == _T.TYPE_MESSAGE:
        target.CopyFrom(value)  # type: ignore[union-attr]
    else:
        setattr(message, field.name, value)


_CACHE: dict[tuple[str, int], st.SearchStrategy[Message]] = {}


def _deferred(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    """``_field``, built on first use (message types may refer to themselves)."""
    return st.deferred(lambda: _field(field, depth))


def message_strategy(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """Messages of ``descriptor``'s type with any subset of fields set."""
    cache_key = (descriptor.full_name, depth)
    if cache_key in _CACHE:
        return _CACHE[cache_key]
    cls = message_factory.GetMessageClass(descriptor)
    if depth >= MAX_DEPTH:
        strategy: st.SearchStrategy[Message] = st.builds(cls)
    else:
        fields = {f.name: f for f in descriptor.fields}

        def build(values: dict[str, Any]) -> Message:
            message = cls()
            for name, value in values.items():
                _assign(message, fields[name], value)
            return message

        always = _always_set(descriptor, depth)
        required = {name: _deferred(fields[name], depth) for name in always}
        optional = {
            name: _deferred(field, depth) for name, field in fields.items() if name not in always
        }
        strategy = st.fixed_dictionaries(required, optional=optional).map(build)
    _CACHE[cache_key] = strategy
    return strategy
