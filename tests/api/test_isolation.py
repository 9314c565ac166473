"""Users cannot see or change each other's data, through any RPC.

User A (``alice-a1``) attacks user B (``bob-b2``), who has real data of every
kind. Every RPC of every ``mnemo.v1`` service is found from the descriptors,
so an RPC added later is attacked without touching this file. For each RPC,
requests are built from its request descriptor: every name field (``name``,
``parent``, ``conversation``, ``*_name``) gets one of B's real resource
names, page tokens are the ones B's own listings returned, ``revision``,
``etag`` and ``request_id`` are B's; the payload (texts, messages, ...) is
plausible, so that a missing check would let the call through. Attacks:

- ``b-names[kind]``: every name field names B's resource of that kind;
- ``mixed[kind-a, kind-b]`` (RPCs with several name fields): the first names A's
  own resource (of a kind that field takes: one that reached NOT_FOUND above),
  the others B's;
- ``foreign-token``: A's own listing with a page token B's listing returned.

Checks: a call naming B's resources fails with NOT_FOUND (INVALID_ARGUMENT or
UNIMPLEMENTED where the RPC answers that anyway), and every implemented RPC
answers NOT_FOUND to at least one of them; the NOT_FOUND is the one a missing
resource of A's own gets; a foreign page token is INVALID_PAGE_TOKEN; no
response or error carries B's data; B's rows, read from the database in every
table with a ``user_id`` column, are unchanged.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.protobuf import struct_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.history import message
from tests.support.rpc_errors import ErrorDetails, error_details
from tests.support.rpcs import CALL_TIMEOUT_S, Rpc, all_rpcs, call, is_name_field
from tests.support.server import running_server
from tests.support.tokens import SigningKeys, bearer
from tests.support.user_rows import user_digest

ALICE, BOB = "alice-a1", "bob-b2"
MARK = "zebra7c1e"
"""In every piece of B's content: found in a response means B's data leaked."""

PROTOS = Path(__file__).resolve().parents[2] / "protos" / "mnemo" / "v1"
PLACEHOLDER = re.compile(r"(\w+)/\{\w+\}")
KINDS = tuple(
    sorted(
        {
            pattern
            for proto in PROTOS.glob("*.proto")
            for pattern in re.findall(r"`(users/\{user\}[^`]*)`", proto.read_text())
        }
    )
)
"""Every kind of a user's resource names the contract documents
(``users/{user}/memories/{memory}``...): a kind added to the protos is attacked too."""
SECRET_FIELDS = ("page_token", "revision", "etag", "request_id")
PAYLOAD_STRINGS = {
    "message_json": json.dumps({"role": "user", "content": "attack"}),
    "text": "attack",
    "ask": "attack",
    "answer": "attack",
    "query": "attack",
    "summary": "attack",
    "message": "attack",
    "run_id": "attack-run",
}
PAYLOAD_INTS = {"message_count": 1}
TENANT_LEVEL = {
    "AgentStateService.GetAppState",
    "AgentStateService.UpdateAppState",
    "GovernanceService.ListUserErasures",
}
"""RPCs that name no user (``apps/{app}/state`` is the caller's tenant's;
``tenants/{tenant}`` a tenant's erasure records): a user's name is
INVALID_NAME there, never NOT_FOUND; their tenant isolation and admin-only
access are tests/api/test_app_state.py's and tests/api/test_erasure_audit.py's."""
ANSWERED_ANYWAY = {
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}


def names_of(user: str, ids: dict[str, str]) -> dict[str, str]:
    """A name of each kind for ``user``: ``{user}`` is the user, every other
    placeholder the id ``ids`` has for the collection before it (``"1"`` if none)."""

    def fill(pattern: str) -> str:
        named = pattern.replace("{user}", user)
        return PLACEHOLDER.sub(lambda m: f"{m.group(1)}/{ids.get(m.group(1), '1')}", named)

    return {kind: fill(kind) for kind in KINDS}


def own_names(user: str, tag: str = "1") -> dict[str, str]:
    """Names of ``user``'s resources, with ids ending in ``tag``."""
    ids = {"conversations": f"c{tag}", "memories": f"m{tag}", "memoryCandidates": f"k{tag}"}
    return names_of(user, ids | {"messages": "0"})


# ------------------------------------------------------------- requests


@dataclass
class _Filling:
    first: str | None
    others: str | None
    secrets: dict[str, str]
    first_done: bool = False
    name_fields: int = 0


def _fill(message: Message, filling: _Filling) -> None:
    for descriptor in message.DESCRIPTOR.fields:
        name = descriptor.name
        if is_name_field(descriptor):
            filling.name_fields += 1
            value = filling.others if filling.first_done else filling.first
            filling.first_done = True
            if value is not None:
                _set(message, descriptor, value)
        elif descriptor.type == FieldDescriptor.TYPE_STRING:
            value = filling.secrets.get(name, PAYLOAD_STRINGS.get(name))
            if value is not None:
                _set(message, descriptor, value)
        elif descriptor.type == FieldDescriptor.TYPE_INT32 and name in PAYLOAD_INTS:
            setattr(message, name, PAYLOAD_INTS[name])
        elif descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            _fill_message(message, descriptor, filling)


def _set(message: Message, descriptor: FieldDescriptor, value: str) -> None:
    if descriptor.is_repeated:
        getattr(message, descriptor.name).append(value)
    else:
        setattr(message, descriptor.name, value)


def _fill_message(message: Message, descriptor: FieldDescriptor, filling: _Filling) -> None:
    message_type = descriptor.message_type
    assert message_type is not None
    if message_type.full_name.startswith("google.protobuf.") or message_type.GetOptions().map_entry:
        return
    part = getattr(message, descriptor.name)
    item = part.add() if descriptor.is_repeated else part
    _fill(item, filling)
    if not item.ListFields():
        if descriptor.is_repeated:
            del part[-1]
        else:
            message.ClearField(descriptor.name)


def build(
    rpc: Rpc, first: str | None, others: str | None, secrets: dict[str, str]
) -> tuple[Message, int]:
    """``rpc``'s request with its name fields filled; also how many there are."""
    request = rpc.request()
    filling = _Filling(first, others, secrets)
    _fill(request, filling)
    return request, filling.name_fields


def has_field(rpc: Rpc, name: str) -> bool:
    return name in rpc.method.input_type.fields_by_name


# ------------------------------------------------------------- B's data


@dataclass
class Victim:
    """B's resource ids per collection (real resources: their names are
    ``names``) and opaque values B's calls returned."""

    ids: dict[str, str]
    secrets: dict[str, str]
    page_tokens: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def names(self) -> dict[str, str]:
        return names_of(BOB, self.ids)

    def harvest(self, message: Message) -> None:
        """Learn the ids of B's resources named in ``message`` (a listing's
        response), for the collections not known yet (events...)."""
        for text in strings_in(message):
            match = HARVESTED.fullmatch(text)
            if match is not None:
                self.ids.setdefault(match.group(1), match.group(2))


HARVESTED = re.compile(rf"users/{BOB}/(?:.+/)?(\w+)/([A-Za-z0-9][A-Za-z0-9._~:-]*)")


def strings_in(message: Message) -> Iterator[str]:
    """Every string anywhere in ``message``."""
    for descriptor, value in message.ListFields():
        values = value if descriptor.is_repeated else [value]
        if descriptor.type == FieldDescriptor.TYPE_STRING:
            yield from values
        elif descriptor.type == FieldDescriptor.TYPE_MESSAGE and not (
            descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry
        ):
            for item in values:
                yield from strings_in(item)


def _struct(**values: str) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(values)
    return result


def create_victim_data(channel: grpc.Channel, metadata: tuple[tuple[str, str]]) -> Victim:
    user = f"users/{BOB}"
    c1, c2 = f"{user}/conversations/c1", f"{user}/conversations/c2"
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    working = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    kw = {"metadata": metadata, "timeout": 10}

    conversation = history.CreateConversation(
        cv.CreateConversationRequest(
            parent=user,
            conversation_id="c1",
            conversation=cv.Conversation(metadata=_struct(note=MARK)),
            request_id="bob-create-1",
        ),
        **kw,
    ).conversation
    history.CreateConversation(
        cv.CreateConversationRequest(parent=user, conversation_id="c2"), **kw
    )
    history.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=c1,
            messages=[message(f"{MARK} one"), message(f"{MARK} two", role="assistant")],
            request_id="bob-append-1",
        ),
        **kw,
    )
    history.AppendMessages(
        cv.AppendMessagesRequest(conversation=c2, messages=[message(f"{MARK} c2")]), **kw
    )
    failed_runs = [
        history.RecordFailedRun(
            cv.RecordFailedRunRequest(
                conversation=c1,
                run_id=f"run-{n}",
                error=cv.RunError(message=f"{MARK} failure {n}"),
                messages=[message(f"{MARK} partial")],
            ),
            **kw,
        ).failed_run.name
        for n in (1, 2)
    ]
    for state in (f"{user}/memoryState", f"{c1}/memoryState"):
        working.RememberExchange(
            wm.RememberExchangeRequest(
                name=state,
                exchange=wm.Exchange(ask=f"{MARK} ask", answer=f"{MARK} answer"),
                request_id=f"bob-remember-{state.count('/')}",
            ),
            **kw,
        )
    memories.CreateMemory(
        mm.CreateMemoryRequest(
            parent=user,
            memory=mm.Memory(text=f"{MARK} likes tea", key="drink"),
            memory_id="m1",
            request_id="bob-memory-1",
        ),
        **kw,
    )
    for text in ("coffee", "water"):
        memories.UpdateMemory(
            mm.UpdateMemoryRequest(
                memory=mm.Memory(name=f"{user}/memories/m1", text=f"{MARK} {text}")
            ),
            **kw,
        )
    memories.CreateMemory(
        mm.CreateMemoryRequest(parent=user, memory=mm.Memory(text=f"{MARK} lives in Oslo")), **kw
    )
    candidates = memories.ProposeMemoryCandidates(
        mm.ProposeMemoryCandidatesRequest(
            parent=user,
            candidates=[
                mm.MemoryCandidate(memory=mm.Memory(text=f"{MARK} candidate {n}"), conversation=c1)
                for n in (1, 2)
            ],
        ),
        **kw,
    ).candidates
    snapshot = history.SnapshotHistory(cv.SnapshotHistoryRequest(conversation=c1), **kw)
    ids = {
        "conversations": "c1",
        "memories": "m1",
        "memoryCandidates": candidates[0].name.rpartition("/")[2],
        "failedRuns": failed_runs[0].rpartition("/")[2],
        "messages": "0",
    }
    secrets = {
        "revision": snapshot.revision,
        "etag": conversation.etag,
        "request_id": "bob-append-1",
    }
    return Victim(ids, secrets)


def collect_page_tokens(
    channel: grpc.Channel, metadata: tuple[tuple[str, str]], victim: Victim, rpcs: list[Rpc]
) -> None:
    """For every listing, the page token B's own first page of one item
    returned; the names in the pages tell B's ids of more collections."""
    for rpc in rpcs:
        response_fields = rpc.method.output_type.fields_by_name
        if not has_field(rpc, "page_token") or "next_page_token" not in response_fields:
            continue
        for kind in KINDS:
            request, _ = build(rpc, victim.names[kind], None, {})
            request.ClearField("page_token")
            if has_field(rpc, "page_size"):
                request.page_size = 1  # type: ignore[attr-defined]
            try:
                (raw,) = call(channel, rpc, request, metadata=metadata)
            except grpc.RpcError:
                continue
            response = rpc.response_class().FromString(raw)
            victim.harvest(response)
            token = response.next_page_token  # type: ignore[attr-defined]
            if token:
                victim.page_tokens[rpc.path] = (kind, token)
                break


# ------------------------------------------------------------- attacks


@dataclass(frozen=True)
class Outcome:
    rpc: Rpc
    attack: str
    code: grpc.StatusCode
    details: ErrorDetails | None
    leaked: bool

    @property
    def label(self) -> str:
        return f"{self.rpc.label} {self.attack}: {self.code.name}"


STREAM_TIMEOUT_S = 2.0
"""A response stream the caller may open (a watch of its own events) stays
open: give it a moment, not a full call timeout."""


def attempt(channel: grpc.Channel, rpc: Rpc, request: Message, attack: str, token: str) -> Outcome:
    timeout = STREAM_TIMEOUT_S if rpc.method.server_streaming else CALL_TIMEOUT_S
    try:
        responses = call(channel, rpc, request, metadata=bearer(token), timeout=timeout)
    except grpc.RpcError as error:
        details = error_details(error)
        leaked = MARK in details.message or any(MARK in v for v in details.metadata.values())
        return Outcome(rpc, attack, details.code, details, leaked)
    leaked = any(MARK.encode() in raw or BOB.encode() in raw for raw in responses)
    return Outcome(rpc, attack, grpc.StatusCode.OK, None, leaked)


def _secrets(rpc: Rpc, victim: Victim) -> dict[str, str]:
    secrets = dict(victim.secrets)
    if rpc.path in victim.page_tokens:
        secrets["page_token"] = victim.page_tokens[rpc.path][1]
    return secrets


def b_names(rpc: Rpc, victim: Victim) -> Iterator[tuple[str, str, Message]]:
    """``(label, kind, request)``: every name field names B's resource of ``kind``."""
    for kind in KINDS:
        request, _ = build(rpc, victim.names[kind], victim.names[kind], _secrets(rpc, victim))
        yield f"b-names[{kind}]", kind, request


def mixed(
    rpc: Rpc, victim: Victim, alice: dict[str, str], own_kinds: Iterable[str]
) -> Iterator[tuple[str, Message]]:
    """``(label, request)``: the first name field names A's resource of a kind
    the RPC takes there (``own_kinds``), every other one B's of any kind."""
    if build(rpc, None, None, {})[1] < 2:
        return
    for own in own_kinds:
        for theirs in KINDS:
            request, _ = build(rpc, alice[own], victim.names[theirs], _secrets(rpc, victim))
            yield f"mixed[{own},{theirs}]", request


@dataclass
class Matrix:
    outcomes: list[Outcome] = field(default_factory=list)

    def by_attack(self, prefix: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.attack.startswith(prefix)]


@pytest.fixture
def jwt_server(database_url: str, tmp_path: Path) -> Iterator[tuple[grpc.Channel, SigningKeys]]:
    keys = SigningKeys.hs256()
    with (
        running_server(database_url, **keys.server_settings(tmp_path)) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield channel, keys


def test_no_rpc_lets_a_user_see_or_change_another_users_data(
    jwt_server: tuple[grpc.Channel, SigningKeys], database_url: str
) -> None:
    channel, keys = jwt_server
    alice_token, bob_token = keys.token(ALICE), keys.token(BOB)
    rpcs = all_rpcs()
    victim = create_victim_data(channel, bearer(bob_token))
    collect_page_tokens(channel, bearer(bob_token), victim, rpcs)
    assert {path.rpartition("/")[2] for path in victim.page_tokens} >= {
        "ListConversations",
        "ListMessages",
        "ListFailedRuns",
        "ListMemories",
        "ListMemoryVersions",
        "ListMemoryCandidates",
    }
    alice = own_names(ALICE)
    before = user_digest(database_url, BOB)
    matrix = Matrix()
    for rpc in rpcs:
        reached: list[str] = []  # the kinds the RPC's first name field takes
        for attack, kind, request in b_names(rpc, victim):
            outcome = attempt(channel, rpc, request, attack, alice_token)
            matrix.outcomes.append(outcome)
            if outcome.code is grpc.StatusCode.NOT_FOUND:
                reached.append(kind)
        for attack, request in mixed(rpc, victim, alice, reached):
            matrix.outcomes.append(attempt(channel, rpc, request, attack, alice_token))
        assert user_digest(database_url, BOB) == before, f"{rpc.label} changed B's rows"

    assert not [o.label for o in matrix.outcomes if o.leaked], "B's data in a response"
    refused = [o for o in matrix.by_attack("b-names") if o.code not in ANSWERED_ANYWAY]
    assert not [o.label for o in refused]
    for rpc in rpcs:
        codes = {o.code for o in matrix.outcomes if o.rpc == rpc}
        if codes != {grpc.StatusCode.UNIMPLEMENTED} and rpc.label not in TENANT_LEVEL:
            assert grpc.StatusCode.NOT_FOUND in codes, f"{rpc.label}: never NOT_FOUND"
    broken = [
        o.label
        for o in matrix.outcomes
        if o.code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
    ]
    assert not broken
    print(
        f"isolation matrix: {len(rpcs)} RPCs, {len(matrix.outcomes)} attacks",
        Counter(o.code.name for o in matrix.outcomes),
    )


def test_another_users_resource_is_not_found_exactly_like_a_missing_one(
    jwt_server: tuple[grpc.Channel, SigningKeys],
) -> None:
    """Same code, reason, metadata keys and message (but for the name) as a
    resource of the caller's own that does not exist."""
    channel, keys = jwt_server
    victim = create_victim_data(channel, bearer(keys.token(BOB)))
    compared = 0
    for rpc in all_rpcs():
        # A caller of its own per RPC: no earlier call has created its
        # resources or changed its settings.
        caller = f"{ALICE}-{rpc.name}"
        token = keys.token(caller)
        for kind in KINDS:
            theirs, _ = build(rpc, victim.names[kind], None, {})
            missing, _ = build(rpc, own_names(caller)[kind], None, {})
            a = attempt(channel, rpc, theirs, kind, token)
            b = attempt(channel, rpc, missing, kind, token)
            if a.code is not grpc.StatusCode.NOT_FOUND or b.code is not grpc.StatusCode.NOT_FOUND:
                continue
            assert a.details is not None and b.details is not None
            assert a.details.reason == b.details.reason, a.label
            assert a.details.metadata.keys() == b.details.metadata.keys(), a.label
            theirs_name = a.details.metadata["name"]
            missing_name = b.details.metadata["name"]
            assert a.details.message.replace(theirs_name, "<name>") == b.details.message.replace(
                missing_name, "<name>"
            ), a.label
            compared += 1
    assert compared >= 14


def test_a_page_token_of_another_users_listing_is_refused(
    jwt_server: tuple[grpc.Channel, SigningKeys],
) -> None:
    channel, keys = jwt_server
    rpcs = all_rpcs()
    victim = create_victim_data(channel, bearer(keys.token(BOB)))
    collect_page_tokens(channel, bearer(keys.token(BOB)), victim, rpcs)
    alice = own_names(ALICE)
    tried = 0
    for rpc in rpcs:
        if rpc.path not in victim.page_tokens:
            continue
        kind, token = victim.page_tokens[rpc.path]
        request, _ = build(rpc, alice[kind], None, {"page_token": token})
        outcome = attempt(channel, rpc, request, "foreign-token", keys.token(ALICE))
        assert outcome.details is not None, outcome.label
        assert (outcome.code, outcome.details.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_PAGE_TOKEN",
        ), outcome.label
        tried += 1
    assert tried >= 6
