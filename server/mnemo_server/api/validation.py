"""Request validation at the edge: collect every problem, then raise once.

A ``Validator`` gathers the field violations of one request; ``raise_if_invalid``
raises a single ``InvalidArgument`` listing all of them (up to
``MAX_REPORTED_VIOLATIONS`` and ``MAX_REPORTED_BYTES``). Its ``reason``
(and message, and metadata) are those of the first problem found, with the
metadata key ``fields`` naming every offending field listed. Use cases then
assume valid input.

The static rules of a request's scalar fields (required, sizes, id
patterns, ranges) are data: each service's ``api/<service>/rules.py``
declares them once as a table of ``FieldRule`` per request type, and
``check_fields`` applies a request's rules in table order. What a table
cannot say (names, which the call's scope authorizes; SDK-native messages;
limits from ``Settings``) is checked by the functions beside the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC
from functools import partial
from typing import Any, TypeVar

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from mnemo_server.api import names
from mnemo_server.auth.caller import CallScope
from mnemo_server.config import Settings
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.limits import event_time_problems
from mnemo_server.domain.messages import MessageProblem, loads_strict, parse_message
from mnemo_server.domain.models import NewMessage

T = TypeVar("T")

MAX_ID_CHARS = 128
"""``request_id``, ``run_id``, ``RunError.code``."""
MAX_TEXT_BYTES = 65_536
"""``Exchange.ask``/``answer``, ``RunError.message``/``details_json``."""
MAX_SUMMARY_BYTES = 16_384
"""A working-memory summary, besides its word budget."""
MAX_METADATA_BYTES = 16_384
"""Conversation metadata, as compact JSON."""

MAX_REPORTED_VIOLATIONS = 50
MAX_REPORTED_BYTES = 4096
"""Field violations one error lists at most, and characters of their fields
and descriptions: the status travels in a trailer, and gRPC clients refuse
trailers over 16 KiB (C-core; 8 KiB by default in some others), so a batch
of a thousand bad entries must not list them all."""

# Timestamp.ToDatetime() accepts 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z.
_MIN_SECONDS = -62_135_596_800
_MAX_SECONDS = 253_402_300_799


MAX_POSITION = 2**31 - 1
"""The largest message position and message count the API takes: positions
and counts are INTEGER columns, 32-bit on PostgreSQL (SQLite would hold
more), so every request field that reaches one (``start_position``,
``expected_position``, ``message_count``) is bounded here, at the edge, and
both stores answer alike."""


def too_large(field: str, limit: int, unit: str, actual: int) -> InvalidArgument:
    """``FIELD_TOO_LARGE`` for ``field``."""
    return InvalidArgument(
        f"{field} is too large: {actual} {unit}, at most {limit}",
        reason="FIELD_TOO_LARGE",
        metadata={"field": field, "limit": str(limit)},
        violations=(FieldViolation(field, f"at most {limit} {unit} (got {actual})"),),
    )


def invalid_message(field: str, problem: str) -> InvalidArgument:
    """``INVALID_MESSAGE`` for the SDK-native message in ``field``."""
    return InvalidArgument(
        f"{field} {problem}",
        reason="INVALID_MESSAGE",
        metadata={"field": field},
        violations=(FieldViolation(field, problem),),
    )


def invalid_field(field: str, description: str, message: str = "") -> InvalidArgument:
    """``INVALID_FIELD`` for ``field``."""
    return InvalidArgument(
        message or f"{field} {description}",
        reason="INVALID_FIELD",
        metadata={"field": field},
        violations=(FieldViolation(field, description),),
    )


class Validator:
    """Collects the ``InvalidArgument`` problems of one request."""

    def __init__(self) -> None:
        self._errors: list[InvalidArgument] = []

    def add(self, error: InvalidArgument) -> None:
        self._errors.append(error)

    def invalid(self, field: str, description: str) -> None:
        self.add(invalid_field(field, description))

    def attempt(self, parse: Callable[[], T], fallback: T) -> T:
        """``parse()``, or ``fallback`` after recording its ``InvalidArgument``.

        The fallback is never used for real work: ``raise_if_invalid`` raises first.
        """
        try:
            return parse()
        except InvalidArgument as error:
            self.add(error)
            return fallback

    def required(self, value: str, field: str) -> None:
        if not value:
            self.invalid(field, "is required")

    def text(self, value: str, field: str, limit: int, *, required: bool = False) -> None:
        """A free text: required if asked, at most ``limit`` UTF-8 bytes, no NUL."""
        if not value:
            if required:
                self.invalid(field, "is required")
            return
        if len(value) * 4 > limit:  # else it fits, whatever its UTF-8
            self.max_bytes(value, field, limit)
        if "\x00" in value:
            self.invalid(field, "must not contain NUL characters")

    def identifier(self, value: str, field: str, *, required: bool = False) -> None:
        """A client-chosen key (``request_id``, ``run_id``): at most 128 characters, no NUL."""
        (_required_identifier if required else _identifier)(self, value, field)

    def new_messages(
        self,
        values: Sequence[str],
        field: str,
        *,
        max_bytes: int,
        max_count: int,
        min_count: int = 0,
    ) -> list[NewMessage]:
        """Validate SDK-native messages (``{field}[i].message_json``)."""
        if len(values) < min_count:
            self.invalid(field, f"needs at least {min_count} message(s)")
        self.max_items(len(values), field, max_count)
        items = values[: max_count + 1]
        paths = [f"{field}[{i}].message_json" for i in range(len(items))]
        return self._parsed(zip(items, paths, strict=True), max_bytes)

    def message(self, message_json: str, field: str, max_bytes: int) -> NewMessage | None:
        """One SDK-native message of at most ``max_bytes``; ``None`` after a problem."""
        parsed = self._parsed(((message_json, field),), max_bytes)
        return parsed[0] if parsed else None

    def _parsed(self, items: Iterable[tuple[str, str]], max_bytes: int) -> list[NewMessage]:
        """The ``(message_json, field)`` that parse, the others' problems recorded."""
        result: list[NewMessage] = []
        for message_json, path in items:
            if len(message_json) * 4 > max_bytes:  # else it fits, whatever its UTF-8
                size = len(message_json.encode("utf-8", "surrogatepass"))
                if size > max_bytes:
                    self.add(too_large(path, max_bytes, "bytes", size))
                    continue
            try:
                result.append(parse_message(message_json))
            except MessageProblem as problem:
                self.add(invalid_message(path, str(problem)))
        return result

    def max_chars(self, value: str, field: str, limit: int = MAX_ID_CHARS) -> None:
        if len(value) > limit:
            self.add(too_large(field, limit, "characters", len(value)))

    def max_bytes(self, value: str, field: str, limit: int) -> None:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > limit:
            self.add(too_large(field, limit, "bytes", size))

    def max_items(self, count: int, field: str, limit: int) -> None:
        if count > limit:
            self.add(too_large(field, limit, "items", count))

    def non_negative(self, value: int, field: str) -> None:
        if value < 0:
            self.invalid(field, f"must not be negative (got {value})")

    def position(self, value: int, field: str, *, minimum: int = 0) -> None:
        """A message position or count: ``minimum`` to ``MAX_POSITION``."""
        if not minimum <= value <= MAX_POSITION:
            self.invalid(field, f"must be between {minimum} and {MAX_POSITION} (got {value})")

    def timestamp(self, value: timestamp_pb2.Timestamp, field: str) -> None:
        if not holds_datetime(value):
            self.invalid(field, "must be between 0001-01-01 and 9999-12-31 UTC")

    def json_text(self, value: str, field: str, limit: int) -> None:
        """An optional JSON document (empty allowed) of at most ``limit`` bytes."""
        self.max_bytes(value, field, limit)
        if value and not is_json(value):
            self.invalid(field, "must be a JSON value")

    def metadata(self, value: Mapping[str, Any], field: str) -> None:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_METADATA_BYTES:
            self.add(too_large(field, MAX_METADATA_BYTES, "bytes of JSON", size))
        if _contains_nul(value):
            self.invalid(field, "must not contain NUL characters")

    def raise_if_invalid(self) -> None:
        """Raise one ``InvalidArgument`` with every violation collected, if
        any (the first of them when they are too many: ``_reported``)."""
        if not self._errors:
            return
        first = self._errors[0]
        if len(self._errors) == 1:
            raise first
        violations = tuple(v for error in self._errors for v in error.violations)
        reported = _reported(violations)
        fields = dict.fromkeys(v.field for v in reported)
        others = len(self._errors) - 1
        message = f"{first.message} (and {others} more problem{'s' if others > 1 else ''}"
        if len(violations) > len(reported):
            message += f"; the first {len(reported)} of {len(violations)} are listed"
        raise InvalidArgument(
            message + ")",
            reason=first.reason,
            metadata={**first.metadata, "fields": ",".join(fields)},
            violations=reported,
        )


def user_of(v: Validator, value: str, field: str, scope: CallScope | None) -> str:
    """The user id of ``users/{user}`` (authorized by the call's ``scope``);
    ``""`` after recording its ``INVALID_NAME`` (a ``NotFound`` raises)."""
    return v.attempt(lambda: names.parse_user(value, field, scope), "")


def _reported(violations: Sequence[FieldViolation]) -> tuple[FieldViolation, ...]:
    """The first violations, within ``MAX_REPORTED_VIOLATIONS`` and
    ``MAX_REPORTED_BYTES`` (the first one always)."""
    reported: list[FieldViolation] = []
    size = 0
    for violation in violations[:MAX_REPORTED_VIOLATIONS]:
        size += len(violation.field) + len(violation.description)
        if reported and size > MAX_REPORTED_BYTES:
            break
        reported.append(violation)
    return tuple(reported)


def _contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_contains_nul(k) or _contains_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_contains_nul(v) for v in value)
    return False


def is_json(text: str) -> bool:
    """Strict JSON (no NaN/Infinity, bounded nesting)."""
    try:
        loads_strict(text)
    except ValueError:
        return False
    return True


def message_event_times(
    v: Validator, values: Sequence[Any], field: str, messages: list[NewMessage]
) -> list[NewMessage]:
    """``messages`` (parsed from ``values``, ``HistoryMessage``s) with the
    event times their clients set (``{field}[i].event_time``: 1970 to 24
    hours ahead of the server's clock, ``domain.limits``)."""
    if len(messages) != len(values):
        return messages  # already refused
    dated: list[NewMessage] = []
    for i, (value, message) in enumerate(zip(values, messages, strict=True)):
        if not value.HasField("event_time"):
            dated.append(message)
            continue
        path = f"{field}[{i}].event_time"
        v.timestamp(value.event_time, path)
        if not holds_datetime(value.event_time):
            dated.append(message)
            continue
        when = value.event_time.ToDatetime(UTC)
        for problem in event_time_problems(when, path):
            v.invalid(problem.part, problem.description)
        dated.append(replace(message, event_time=when))
    return dated


def messages_of(
    v: Validator,
    values: Sequence[Any],
    field: str,
    settings: Settings,
    *,
    min_count: int = 0,
) -> list[NewMessage]:
    """SDK-native messages (``{field}[i].message_json``): at most
    ``max_messages_per_append`` of at most ``max_message_bytes`` each
    (``Settings``), ``min_count`` at least."""
    return v.new_messages(
        [m.message_json for m in values],
        field,
        max_bytes=settings.max_message_bytes,
        max_count=settings.max_messages_per_append,
        min_count=min_count,
    )


# ------------------------------------------------------------ rules as data

Check = Callable[[Validator, Any, str], None]


def holds_datetime(value: timestamp_pb2.Timestamp) -> bool:
    """Whether ``value`` is a time a ``datetime`` holds (0001-01-01..9999-12-31)."""
    return _MIN_SECONDS <= value.seconds <= _MAX_SECONDS and 0 <= value.nanos < 10**9


"""One static rule: records the problems of ``value`` (at ``field``) on the validator."""


@dataclass(frozen=True)
class FieldRule:
    """A static rule of one field of a request, by its path from the request:
    ``request_id``, ``error.message``, ``memory_state.recent[].ask`` (``[]``:
    every element of a repeated field, reported as ``recent[i]``).
    ``when_set``: only when the last field is present (a message or
    ``optional`` field)."""

    path: str
    check: Check
    when_set: bool = False
    _steps: tuple[tuple[str, bool], ...] = field(init=False, repr=False, compare=False)
    top: str = field(init=False, repr=False, compare=False)
    """The field's name when it is a scalar of the message itself (the
    common case, checked without a walk), else ``""``."""

    def __post_init__(self) -> None:
        steps = tuple(
            (step.removesuffix("[]"), step.endswith("[]")) for step in self.path.split(".")
        )
        object.__setattr__(self, "_steps", steps)
        simple = len(steps) == 1 and not steps[0][1]
        object.__setattr__(self, "top", steps[0][0] if simple else "")

    def apply(self, v: Validator, request: Message, prefix: str = "") -> None:
        """Check the field of ``request`` (reported under ``prefix.``, if any)."""
        self._walk(v, request, 0, f"{prefix}." if prefix else "")

    def _walk(self, v: Validator, holder: Any, depth: int, prefix: str) -> None:
        name, repeated = self._steps[depth]
        here = f"{prefix}{name}"
        last = depth == len(self._steps) - 1
        if last and self.when_set and not holder.HasField(name):
            return
        value = getattr(holder, name)
        if not repeated:
            if last:
                self.check(v, value, here)
            else:
                self._walk(v, value, depth + 1, f"{here}.")
            return
        for index, item in enumerate(value):
            if last:
                self.check(v, item, f"{here}[{index}]")
            else:
                self._walk(v, item, depth + 1, f"{here}[{index}].")


Rules = Mapping[type[Message], tuple[FieldRule, ...]]
"""A service's table: the static rules of each request type, in field order."""


def check_fields(v: Validator, request: Message, rules: Rules, prefix: str = "") -> None:
    """Record every violation of ``request``'s rules in ``rules`` on ``v``
    (the caller raises once, with the problems of the rest of the request);
    ``prefix``: where ``request`` is in the whole (``records[3].message``)."""
    for rule in rules[type(request)]:
        top = rule.top
        if top and not prefix:
            if not rule.when_set or request.HasField(top):
                rule.check(v, getattr(request, top), top)
        else:
            rule.apply(v, request, prefix)


# The checks are the ``Validator``'s methods, bound to their limits with
# ``partial``, or for the commonest a function of their own (one call each).


def _identifier(v: Validator, value: str, field: str) -> None:
    if value:
        if len(value) > MAX_ID_CHARS:
            v.add(too_large(field, MAX_ID_CHARS, "characters", len(value)))
        if "\x00" in value:
            v.invalid(field, "must not contain NUL characters")


def _required_identifier(v: Validator, value: str, field: str) -> None:
    if not value:
        v.invalid(field, "is required")
    _identifier(v, value, field)


def identifier(*, required: bool = False) -> Check:
    """A client-chosen key: at most ``MAX_ID_CHARS`` characters, no NUL."""
    return _required_identifier if required else _identifier


def text(limit: int, *, required: bool = False) -> Check:
    """A free text of at most ``limit`` UTF-8 bytes, no NUL."""
    return partial(Validator.text, limit=limit, required=required)


def max_bytes(limit: int) -> Check:
    return partial(Validator.max_bytes, limit=limit)


def json_text(limit: int) -> Check:
    """An optional JSON document of at most ``limit`` bytes."""
    return partial(Validator.json_text, limit=limit)


def non_negative() -> Check:
    return Validator.non_negative


def position(*, minimum: int = 0) -> Check:
    """A message position or count, ``minimum`` to ``MAX_POSITION``."""
    return partial(Validator.position, minimum=minimum)


def between(minimum: int, maximum: int) -> Check:
    """An integer from ``minimum`` to ``maximum``."""

    def check(v: Validator, value: int, field: str) -> None:
        if not minimum <= value <= maximum:
            v.invalid(field, f"must be between {minimum} and {maximum} (got {value})")

    return check


def required() -> Check:
    return Validator.required


def timestamp() -> Check:
    """A timestamp within 0001-01-01..9999-12-31 (use with ``when_set``)."""
    return Validator.timestamp


ID_RULE = f"must be {names.ID_CHARACTERS}"


def client_id() -> Check:
    """A client-chosen resource id (AIP-133), or empty: the server picks one."""
    return pattern(names.ID_PATTERN, ID_RULE)


def pattern(regex: str, description: str) -> Check:
    """An optional value (empty allowed) that must match ``regex`` in full."""
    compiled = re.compile(regex)

    def check(v: Validator, value: str, path: str) -> None:
        if value and compiled.fullmatch(value) is None:
            v.invalid(path, description)

    return check
