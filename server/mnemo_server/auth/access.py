"""The one authorization rule: who may name which user's resources.

The credential decides who the caller is; the request body never does. A
caller may name its own user, or, with the admin role, any user of its own
tenant; and only a user that does not exist yet or belongs to the caller's
tenant. Anything else is ``NotFound`` for the name, the very answer a
resource that does not exist gets, so a caller cannot even learn that another
user exists.

``check_user`` is called by ``api.names`` wherever a resource name is parsed,
with the call's scope as an argument, so every RPC is covered by
construction. It is synchronous: the tenants of the users a request names
are looked up before the handler runs (``users_named_in`` +
``UserStore.tenants_of``, by ``auth.interceptor``); a user the lookup did not
cover is refused (fail closed).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from mnemo_server.auth.caller import CallScope
from mnemo_server.domain.errors import not_found

MAX_USERS_PER_REQUEST = 32
"""Distinct users one request may name (any more are not looked up, so refused)."""

_USER_PREFIX = re.compile(r"users/([A-Za-z0-9][A-Za-z0-9._~:-]{0,127})(?:/|$)")
_WELL_KNOWN = "google.protobuf."


def may_act_for(scope: CallScope, user_id: str) -> bool:
    """Whether ``scope``'s caller may name ``user_id``'s resources."""
    caller = scope.caller
    if user_id != caller.user_id and not caller.admin:
        return False
    if user_id not in scope.tenants:
        return False
    tenant = scope.tenants[user_id]
    return tenant is None or tenant == caller.tenant_id


def check_user(scope: CallScope | None, user_id: str, name: str) -> None:
    """Raise ``NotFound`` for ``name`` unless the caller of ``scope`` may act
    for ``user_id`` (always allowed under ``--auth none``: no scope)."""
    if scope is not None and not may_act_for(scope, user_id):
        raise not_found(name)


def users_to_look_up(scope: CallScope, message: object) -> list[str]:
    """The user ids ``message`` names whose tenant ``scope`` does not know yet
    and that its caller could be allowed to name (at most
    ``MAX_USERS_PER_REQUEST`` per scope)."""
    caller = scope.caller
    found: list[str] = []
    if not isinstance(message, Message):
        return found
    for user_id in users_named_in(message):
        if len(scope.tenants) + len(found) >= MAX_USERS_PER_REQUEST:
            break
        if user_id in scope.tenants or user_id in found:
            continue
        if caller.admin or user_id == caller.user_id:
            found.append(user_id)
    return found


def user_of_name(text: str) -> str:
    """The user id of a ``users/{user}...`` name; empty for anything else."""
    match = _USER_PREFIX.match(text)
    return match.group(1) if match is not None else ""


def users_named_in(message: Message) -> Iterator[str]:
    """Every user id of a ``users/{user}...`` string anywhere in ``message``
    (any field, nested and repeated; well-known types such as ``Struct`` are
    data, not names, and are skipped)."""
    for descriptor, value in message.ListFields():
        if descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _users_in_messages(descriptor, value)
        elif descriptor.type == FieldDescriptor.TYPE_STRING:
            values = value if descriptor.is_repeated else (value,)
            for text in values:
                match = _USER_PREFIX.match(text)
                if match is not None:
                    yield match.group(1)


def _users_in_messages(descriptor: FieldDescriptor, value: object) -> Iterator[str]:
    message_type = descriptor.message_type
    if message_type is None or message_type.full_name.startswith(_WELL_KNOWN):
        return
    if message_type.GetOptions().map_entry:
        entry_value = message_type.fields_by_name["value"]
        if entry_value.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value.values():  # type: ignore[attr-defined]
                yield from users_named_in(item)
        return
    items = value if descriptor.is_repeated else (value,)
    for item in items:  # type: ignore[attr-defined]
        yield from users_named_in(item)
