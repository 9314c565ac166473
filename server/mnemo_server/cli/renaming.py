"""``mnemo import --as-user USER``: an export's records with every name of
the exporting user made a name of ``USER``.

A user's resources are all named under ``users/{user}``, and records refer
to one another by those names: a message's conversation is in its name, an
entry names its conversation, a candidate its saved entry, a checkpoint its
thread, an analytics event the entry or candidate it is about (its
attributes). So every string of a record (field, list item or map value,
at any depth) that is ``users/{from}`` or starts with ``users/{from}/`` is
rewritten to ``users/{to}...``; JSON payloads (``*_json`` fields, kept
byte for byte) and ``google.protobuf`` values (``Struct`` metadata, times)
are left as they are. Ids, positions, times, etags and vectors stay, so the
import is the same data under another user (a ``Memory.text`` that is
nothing but such a name would be rewritten too).
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from mnemo.client import ExportRecord

_USER = re.compile(r"users/([^/]+)(?:/|$)")


def user_of(record: ExportRecord) -> str | None:
    """The user whose names the record carries (its first name), if any."""
    for value in _strings(record):
        found = _USER.match(value)
        if found:
            return found.group(1)
    return None


def renamed(record: ExportRecord, old_user: str, new_user: str) -> ExportRecord:
    """A copy of ``record`` with the names of ``old_user`` made ``new_user``'s."""
    copy = ExportRecord()
    copy.CopyFrom(record)
    if old_user != new_user:
        _rename(copy, f"users/{old_user}", f"users/{new_user}")
    return copy


def _own(value: str, old: str) -> bool:
    return value == old or value.startswith(old + "/")


def _type(field: FieldDescriptor) -> Descriptor:
    message_type = field.message_type
    assert message_type is not None, field.full_name
    return message_type


def _is_map(field: FieldDescriptor) -> bool:
    return _type(field).GetOptions().map_entry


def _walked(field: FieldDescriptor) -> bool:
    if field.name.endswith("_json"):
        return False
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return not _type(field).full_name.startswith("google.protobuf.")
    return field.type == FieldDescriptor.TYPE_STRING


def _rename(message: Message, old: str, new: str) -> None:
    for field, value in message.ListFields():
        if not _walked(field):
            continue
        if field.type == FieldDescriptor.TYPE_STRING:
            if field.is_repeated:
                value[:] = [new + v[len(old) :] if _own(v, old) else v for v in value]
            elif _own(value, old):
                setattr(message, field.name, new + value[len(old) :])
        elif _is_map(field):
            _rename_map(field, value, old, new)
        elif field.is_repeated:
            for item in value:
                _rename(item, old, new)
        else:
            _rename(value, old, new)


def _rename_map(field: FieldDescriptor, entries: Any, old: str, new: str) -> None:
    value_field = _type(field).fields_by_name["value"]
    if value_field.type == FieldDescriptor.TYPE_STRING:
        for key, value in list(entries.items()):
            if _own(value, old):
                entries[key] = new + value[len(old) :]
    elif _walked(value_field):
        for item in entries.values():
            _rename(item, old, new)


def _strings(message: Message) -> list[str]:
    """The strings ``_rename`` would look at, in field order (depth first)."""
    found: list[str] = []
    for field, value in message.ListFields():
        if not _walked(field):
            continue
        if field.type == FieldDescriptor.TYPE_STRING:
            found.extend(value if field.is_repeated else [value])
        elif _is_map(field):
            continue
        elif field.is_repeated:
            for item in value:
                found.extend(_strings(item))
        else:
            found.extend(_strings(value))
    return found
