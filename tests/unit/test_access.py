"""The authorization rule (``auth.access``) and the names it guards (``api.names``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.protobuf import struct_pb2

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.api import names
from mnemo_server.api.memories import requests
from mnemo_server.auth.access import (
    MAX_USERS_PER_REQUEST,
    may_act_for,
    users_named_in,
    users_to_look_up,
)
from mnemo_server.auth.caller import Caller, CallScope, caller_of, calling_as, current_scope
from mnemo_server.domain.errors import InvalidArgument, NotFound

ALICE = Caller("alice", "t1")
ADMIN = Caller("svc", "t1", admin=True)


def test_a_caller_may_name_its_own_user_of_its_tenant_or_not_yet_existing() -> None:
    assert may_act_for(CallScope(ALICE, {"alice": "t1"}), "alice")
    assert may_act_for(CallScope(ALICE, {"alice": None}), "alice")
    assert not may_act_for(CallScope(ALICE, {"alice": "t2"}), "alice")
    assert not may_act_for(CallScope(ALICE, {"bob": "t1"}), "bob")
    assert not may_act_for(CallScope(ALICE, {}), "alice")  # not looked up: refused


def test_an_admin_may_name_any_user_of_its_tenant() -> None:
    scope = CallScope(ADMIN, {"bob": "t1", "carol": None, "dave": "t2"})
    assert may_act_for(scope, "bob")
    assert may_act_for(scope, "carol")
    assert not may_act_for(scope, "dave")
    assert not may_act_for(scope, "erin")


def test_parsing_a_name_of_another_user_is_not_found_for_that_name() -> None:
    scope = CallScope(ALICE, {"alice": "t1", "bob": "t1"})
    assert names.parse_user("users/alice", "parent", scope) == "alice"
    cases: list[tuple[Callable[[str, str, CallScope | None], object], str]] = [
        (names.parse_user, "users/bob"),
        (names.parse_conversation, "users/bob/conversations/c1"),
        (names.parse_memory_state, "users/bob/memoryState"),
        (names.parse_memory_state, "users/bob/conversations/c1/memoryState"),
        (requests.parse_memory, "users/bob/memories/m1"),
        (requests.parse_candidate, "users/bob/memoryCandidates/k1"),
    ]
    for parse, name in cases:
        with pytest.raises(NotFound) as raised:
            parse(name, "name", scope)
        assert (raised.value.message, dict(raised.value.metadata)) == (
            f"{name} does not exist",
            {"name": name},
        )
    with pytest.raises(InvalidArgument):  # malformed first: no user to check
        names.parse_user("users/bob smith", "parent", scope)
    # --auth none: no scope, no identity, no check
    assert names.parse_user("users/bob", "parent", None) == "bob"


def test_the_scope_reaches_a_servicer_through_the_interceptors_context() -> None:
    scope = CallScope(ALICE)
    assert current_scope() is None
    with calling_as(scope):
        assert current_scope() is scope
        assert caller_of(current_scope()) == ALICE
    assert current_scope() is None and caller_of(None) is None


def test_users_named_anywhere_in_a_request_are_found() -> None:
    metadata = struct_pb2.Struct()
    metadata.update({"note": "users/ignored"})
    request = mm.ProposeMemoryCandidatesRequest(
        parent="users/alice",
        candidates=[
            mm.MemoryCandidate(
                conversation="users/bob/conversations/c1",
                memory=mm.Memory(conversation="users/carol/conversations/c2", metadata={"k": "v"}),
            )
        ],
    )
    assert sorted(users_named_in(request)) == ["alice", "bob", "carol"]
    update = cv.UpdateConversationRequest(
        conversation=cv.Conversation(name="users/dave/conversations/c", metadata=metadata)
    )
    assert list(users_named_in(update)) == ["dave"]
    assert list(users_named_in(cv.GetConversationRequest(name="usersx/erin"))) == []


def test_only_users_the_caller_could_name_are_looked_up_and_boundedly() -> None:
    request = mm.ProposeMemoryCandidatesRequest(
        parent="users/alice",
        candidates=[
            mm.MemoryCandidate(conversation=f"users/u{n}/conversations/c")
            for n in range(MAX_USERS_PER_REQUEST * 2)
        ],
    )
    assert users_to_look_up(CallScope(ALICE), request) == ["alice"]
    assert users_to_look_up(CallScope(ALICE, {"alice": "t1"}), request) == []
    admin = users_to_look_up(CallScope(ADMIN), request)
    assert len(admin) == MAX_USERS_PER_REQUEST
    assert users_to_look_up(CallScope(ADMIN), b"not a message") == []
