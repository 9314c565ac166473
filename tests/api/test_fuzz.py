"""Generated and malformed requests to every RPC never get UNKNOWN or INTERNAL.

For every RPC of every ``mnemo.v1`` service (from the descriptors), Hypothesis
generates requests from the request's message descriptor
(``tests.support.fuzzing``) and, now and then, raw bytes that may not even
parse; they go to a real server (once on SQLite, once on PostgreSQL) through a
generic bytes channel.
Every failure must carry a canonical code other than UNKNOWN and INTERNAL,
with an ErrorInfo of domain ``mnemo.v1``. A second test sends arbitrary
``authorization`` metadata to a server with ``--auth jwt``.

Bounded: ``MNEMO_FUZZ_EXAMPLES`` examples per RPC (default 25), derandomized
(the same examples on every run, so a CI run is reproducible) unless
``MNEMO_FUZZ_RANDOM=1``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, memories_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.history import message
from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.fuzzing import message_strategy
from tests.support.rpc_errors import error_details, rpc_failure
from tests.support.rpcs import Rpc, all_rpcs, call
from tests.support.server import running_server
from tests.support.tokens import SigningKeys

EXAMPLES = int(os.environ.get("MNEMO_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not os.environ.get("MNEMO_FUZZ_RANDOM"),
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
RPCS = all_rpcs()
# Answered by the client library itself, not by the server.
CLIENT_SIDE = {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
# A watch stream waits for changes: give it a moment, not a full call timeout.
WATCH_TIMEOUT_S = 0.5
STREAM_TIMEOUT_S = 5.0


def seed(channel: grpc.Channel) -> None:
    """Real resources of user ``u1`` behind the names the fuzzer favors."""
    user, c1 = "users/u1", "users/u1/conversations/c1"
    history = conversations_pb2_grpc.ConversationServiceStub(channel)
    history.AppendMessages(
        cv.AppendMessagesRequest(
            conversation=c1, messages=[message("hello"), message("hi", role="assistant")]
        ),
        timeout=10,
    )
    history.RecordFailedRun(
        cv.RecordFailedRunRequest(conversation=c1, run_id="r1", error=cv.RunError(message="boom")),
        timeout=10,
    )
    memories = memories_pb2_grpc.MemoryServiceStub(channel)
    memories.CreateMemory(
        mm.CreateMemoryRequest(parent=user, memory=mm.Memory(text="likes tea"), memory_id="m1"),
        timeout=10,
    )
    working = working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)
    for state in (f"{user}/memoryState", f"{c1}/memoryState"):
        working.RememberExchange(
            wm.RememberExchangeRequest(name=state, exchange=wm.Exchange(ask="q", answer="a")),
            timeout=10,
        )


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", marks=pytest.mark.sqlite),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)
def fuzz_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A seeded server on each backend; the whole module runs once per backend."""
    if request.param == "sqlite":
        sqlite: SqliteDatabases = request.getfixturevalue("sqlite_databases")
        url = sqlite.fresh(tmp_path_factory.mktemp("fuzz"))
    else:
        postgres: PostgresDatabases = request.getfixturevalue("postgres_databases")
        url = postgres.fresh()
    try:
        with running_server(url) as target:
            with grpc.insecure_channel(target) as channel:
                seed(channel)
            yield target
    finally:
        if request.param == "postgres":
            postgres.drop(url)


@pytest.fixture(scope="module")
def fuzz_channel(fuzz_target: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(fuzz_target) as channel:
        yield channel


def _payloads(rpc: Rpc) -> st.SearchStrategy[list[bytes]]:
    one = st.one_of(
        message_strategy(rpc.method.input_type).map(lambda m: m.SerializeToString()),
        st.binary(max_size=300),
    )
    if rpc.method.client_streaming:
        return st.lists(one, min_size=1, max_size=3)
    return one.map(lambda payload: [payload])


def _timeout(rpc: Rpc) -> float:
    if rpc.name.startswith("Watch"):
        return WATCH_TIMEOUT_S
    return STREAM_TIMEOUT_S if rpc.method.server_streaming else 10.0


def assert_canonical(
    channel: grpc.Channel, rpc: Rpc, payloads: list[bytes], **kwargs: object
) -> grpc.StatusCode:
    """Call; a failure must be a canonical code with a mnemo.v1 ErrorInfo."""
    try:
        call(channel, rpc, payloads if rpc.method.client_streaming else payloads[0], **kwargs)  # type: ignore[arg-type]
    except grpc.RpcError as error:
        details = error_details(error)
        if details.code in CLIENT_SIDE and rpc.method.server_streaming:
            return details.code
        assert details.code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (
            f"{rpc.label}: {details.code.name} {details.message!r}"
        )
        assert (details.error_infos, details.domain) == (1, "mnemo.v1"), (
            f"{rpc.label}: {details.code.name} without an ErrorInfo: {details.message!r}"
        )
        return details.code
    return grpc.StatusCode.OK


@pytest.mark.parametrize("rpc", RPCS, ids=lambda rpc: rpc.label)
@FUZZ
@given(data=st.data())
def test_generated_requests_never_get_unknown_or_internal(
    fuzz_channel: grpc.Channel, rpc: Rpc, data: st.DataObject
) -> None:
    payloads = data.draw(_payloads(rpc), label="payloads")
    assert_canonical(fuzz_channel, rpc, payloads, timeout=_timeout(rpc))


_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_B64 = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=", max_size=60
)
AUTHORIZATION = st.one_of(
    st.text(alphabet=_ASCII, max_size=80),
    st.builds(lambda t: f"Bearer {t}", st.text(alphabet=_ASCII, max_size=80)),
    st.builds(lambda a, b, c: f"Bearer {a}.{b}.{c}", _B64, _B64, _B64),
    st.builds(lambda a, b: f"bearer   {a}.{b}.", _B64, _B64),
)


@pytest.fixture(scope="module")
def jwt_channel(
    sqlite_databases: SqliteDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[grpc.Channel]:
    directory = tmp_path_factory.mktemp("fuzz-jwt")
    url = sqlite_databases.fresh(directory)
    keys = SigningKeys.hs256()
    with running_server(url, **keys.server_settings(Path(directory))) as target:
        with grpc.insecure_channel(target) as channel:
            yield channel


@pytest.mark.sqlite
@settings(FUZZ, max_examples=EXAMPLES * 4)
@given(authorization=AUTHORIZATION, rpc=st.sampled_from(RPCS))
def test_arbitrary_credentials_are_unauthenticated(
    jwt_channel: grpc.Channel, authorization: str, rpc: Rpc
) -> None:
    payload = rpc.request().SerializeToString()
    code = assert_canonical(
        jwt_channel,
        rpc,
        [payload],
        metadata=(("authorization", authorization),),
        timeout=_timeout(rpc),
    )
    assert code is grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_metadata_numbers_json_cannot_hold_are_invalid(
    fuzz_channel: grpc.Channel, number: float
) -> None:
    """Found by the fuzzer: a Struct holding NaN was INTERNAL."""
    metadata = struct_pb2.Struct()
    metadata.update({"score": number})
    stub = conversations_pb2_grpc.ConversationServiceStub(fuzz_channel)
    details = rpc_failure(
        stub.CreateConversation,
        cv.CreateConversationRequest(
            parent="users/u1", conversation=cv.Conversation(metadata=metadata)
        ),
        timeout=10,
    )
    assert (details.code, details.reason, details.fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FIELD",
        ("conversation.metadata",),
    )
