"""Authentication through a real server: which tokens are accepted, which are refused, and
what an admin credential of a tenant may do.

Every refusal is UNAUTHENTICATED with one ErrorInfo (domain mnemo.v1, reason
UNAUTHENTICATED, metadata ``problem``); health and reflection need no token.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc, sync_pb2, sync_pb2_grpc, working_memory_pb2_grpc
from mnemo.v1 import working_memory_pb2 as wm
from tests.api.governance import eventually, failure
from tests.support.rpc_errors import ErrorDetails, rpc_failure
from tests.support.server import running_server
from tests.support.tokens import JwksKeys, SigningKeys, bearer, claims, hs256_with, unsigned
from tests.support.user_rows import tenant_of

Metadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AuthServer:
    channel: grpc.Channel
    keys: SigningKeys
    database_url: str

    @property
    def working_memory(self) -> working_memory_pb2_grpc.WorkingMemoryServiceStub:
        return working_memory_pb2_grpc.WorkingMemoryServiceStub(self.channel)

    def state(self, name: str, metadata: Metadata) -> wm.MemoryState:
        response = self.working_memory.GetMemoryState(
            wm.GetMemoryStateRequest(name=name), metadata=metadata, timeout=10
        )
        state: wm.MemoryState = response.memory_state
        return state

    def remember(self, name: str, ask: str, metadata: Metadata) -> wm.MemoryState:
        response = self.working_memory.RememberExchange(
            wm.RememberExchangeRequest(name=name, exchange=wm.Exchange(ask=ask, answer="ok")),
            metadata=metadata,
            timeout=10,
        )
        state: wm.MemoryState = response.memory_state
        return state

    def refused(self, metadata: Metadata, name: str = "users/alice/memoryState") -> ErrorDetails:
        return rpc_failure(
            self.working_memory.GetMemoryState,
            wm.GetMemoryStateRequest(name=name),
            metadata=metadata,
            timeout=10,
        )


def _serving(database_url: str, keys: SigningKeys, directory: Path, **overrides: Any) -> Any:
    return running_server(database_url, **keys.server_settings(directory, **overrides))


@pytest.fixture
def hs256(database_url: str, tmp_path: Path) -> Iterator[AuthServer]:
    keys = SigningKeys.hs256()
    with (
        _serving(database_url, keys, tmp_path) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield AuthServer(channel, keys, database_url)


def _assert_unauthenticated(details: ErrorDetails, problem: str, label: str) -> None:
    assert details.code is grpc.StatusCode.UNAUTHENTICATED, label
    assert (details.domain, details.reason, details.error_infos) == (
        "mnemo.v1",
        "UNAUTHENTICATED",
        1,
    ), label
    assert details.metadata.get("problem") == problem, label


# ------------------------------------------------------------------ accepted


@pytest.mark.parametrize("make_keys", [SigningKeys.hs256, SigningKeys.rs256, SigningKeys.es256])
def test_tokens_of_each_algorithm_are_accepted_and_new_users_join_the_callers_tenant(
    make_keys: Any, database_url: str, tmp_path: Path
) -> None:
    keys: SigningKeys = make_keys()
    with _serving(database_url, keys, tmp_path) as target, grpc.insecure_channel(target) as ch:
        server = AuthServer(ch, keys, database_url)
        token = bearer(keys.token("alice", tenant="acme"))
        state = server.remember("users/alice/memoryState", "hello", token)
        assert [e.ask for e in state.recent] == ["hello"]
        assert [e.ask for e in server.state("users/alice/memoryState", token).recent] == ["hello"]
    assert tenant_of(database_url, "alice") == "acme"


def test_a_token_without_a_tenant_claim_is_of_the_default_tenant(hs256: AuthServer) -> None:
    hs256.remember("users/alice/memoryState", "hi", bearer(hs256.keys.token("alice")))
    assert tenant_of(hs256.database_url, "alice") == ""


# ------------------------------------------------------------------ refused


def test_missing_malformed_expired_misaddressed_and_forged_tokens_are_unauthenticated(
    hs256: AuthServer,
) -> None:
    keys = hs256.keys
    other = SigningKeys.hs256()
    valid = claims("alice")
    cases: list[tuple[str, Metadata, str]] = [
        ("no metadata", (), "missing"),
        ("two tokens", bearer(keys.token("alice")) * 2, "missing"),
        ("not bearer", (("authorization", "Basic YWxpY2U6cHc="),), "malformed"),
        ("not a JWT", bearer("not.a.jwt"), "malformed"),
        ("empty token", (("authorization", "Bearer "),), "malformed"),
        ("expired", bearer(keys.token("alice", expires_in=-3600)), "expired"),
        ("wrong audience", bearer(keys.token("alice", audience="someone-else")), "audience"),
        ("no audience", bearer(keys.sign({**valid, "aud": None})), "claims"),
        ("no expiry", bearer(keys.sign({k: v for k, v in valid.items() if k != "exp"})), "claims"),
        ("wrong signature", bearer(other.token("alice")), "signature"),
        ("alg none", bearer(unsigned(valid)), "algorithm"),
        ("not yet valid", bearer(keys.token("alice", nbf=valid["iat"] + 3600)), "claims"),
        ("subject not an id", bearer(keys.token("alice smith")), "claims"),
        ("subject not a string", bearer(keys.sign({**valid, "sub": 42})), "claims"),
        ("tenant not a string", bearer(keys.token("alice", tenant=["t1"])), "claims"),
    ]
    for label, metadata, problem in cases:
        _assert_unauthenticated(hs256.refused(metadata), problem, label)


def test_a_token_of_the_wrong_algorithm_for_the_key_is_refused(
    database_url: str, tmp_path: Path
) -> None:
    """Algorithm confusion: an HS256 token whose "secret" is the server's public
    RSA key, and an ES256 token on a server configured for RS256."""
    keys = SigningKeys.rs256()
    with _serving(database_url, keys, tmp_path) as target, grpc.insecure_channel(target) as ch:
        server = AuthServer(ch, keys, database_url)
        confused = hs256_with(keys.verifying_pem, claims("alice"))
        _assert_unauthenticated(server.refused(bearer(confused)), "algorithm", "HS256 on RS256")
        other_curve = SigningKeys.es256().token("alice")
        _assert_unauthenticated(server.refused(bearer(other_curve)), "algorithm", "ES256 on RS256")
        server.state("users/alice/memoryState", bearer(keys.token("alice")))


def test_the_issuer_is_checked_when_configured(database_url: str, tmp_path: Path) -> None:
    keys = SigningKeys.es256()
    issuer = "https://issuer.example"
    with (
        _serving(database_url, keys, tmp_path, jwt_issuer=issuer) as target,
        grpc.insecure_channel(target) as ch,
    ):
        server = AuthServer(ch, keys, database_url)
        _assert_unauthenticated(server.refused(bearer(keys.token("alice"))), "claims", "no iss")
        wrong = bearer(keys.token("alice", iss="https://elsewhere.example"))
        _assert_unauthenticated(server.refused(wrong), "issuer", "wrong iss")
        server.state("users/alice/memoryState", bearer(keys.token("alice", iss=issuer)))


def test_streaming_and_not_yet_implemented_rpcs_need_a_token_too(hs256: AuthServer) -> None:
    memories = memories_pb2_grpc.MemoryServiceStub(hs256.channel)
    recall = rpc_failure(
        lambda: list(
            memories.RecallMemories(
                mm.RecallMemoriesRequest(parent="users/alice", query="x"), timeout=10
            )
        )
    )
    _assert_unauthenticated(recall, "missing", "RecallMemories")
    sync = sync_pb2_grpc.SyncServiceStub(hs256.channel)
    pending = rpc_failure(
        sync.ListChanges, sync_pb2.ListChangesRequest(parent="users/alice"), timeout=10
    )
    _assert_unauthenticated(pending, "missing", "ListChanges")


def test_health_and_reflection_need_no_token(hs256: AuthServer) -> None:
    health = health_pb2_grpc.HealthStub(hs256.channel)
    response = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert response.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(hs256.channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (listed,) = list(reflection.ServerReflectionInfo(iter([request]), timeout=10))
    assert "mnemo.v1.MemoryService" in {s.name for s in listed.list_services_response.service}


# ------------------------------------------------------------------ key rotation


@pytest.mark.parametrize(
    "backend", [pytest.param("sqlite", marks=pytest.mark.sqlite)], indirect=True
)  # the store plays no part
def test_jwks_keys_rotate_without_a_restart(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A new key is accepted once the file holds it, the key it replaced is
    refused (problem ``key``), and a file that turns bad keeps the keys."""
    old, new = SigningKeys.rs256(), SigningKeys.es256()
    settings = JwksKeys({"old": old}).server_settings(tmp_path, jwt_jwks_refresh_seconds=0.2)
    name = "users/alice/memoryState"
    by_old = bearer(old.sign(claims("alice"), kid="old"))
    by_new = bearer(new.sign(claims("alice"), kid="new"))
    with (
        running_server(database_url, **settings) as target,
        grpc.insecure_channel(target) as channel,
        caplog.at_level(logging.WARNING, logger="mnemo_server.auth.keys"),
    ):
        server = AuthServer(channel, new, database_url)

        def accepts_new() -> bool | None:
            return True if failure(lambda: server.state(name, by_new)) is None else None

        server.remember(name, "signed by the old key", by_old)
        _assert_unauthenticated(server.refused(by_new), "key", "not published yet")

        JwksKeys({"new": new}).write(settings["jwt_jwks_file"])
        eventually(accepts_new, "the new key")
        _assert_unauthenticated(server.refused(by_old), "key", "rotated out")

        settings["jwt_jwks_file"].write_text('{"keys": [')
        eventually(lambda: accepts_new() and ("not reloaded" in caplog.text or None), "the warning")
        assert [e.ask for e in server.state(name, by_new).recent] == ["signed by the old key"]
        _assert_unauthenticated(server.refused(by_old), "key", "still rotated out")


# ------------------------------------------------------------------ tenants


def test_an_admin_acts_for_the_users_of_its_tenant_and_no_other(hs256: AuthServer) -> None:
    keys = hs256.keys
    hs256.remember("users/alice/memoryState", "alice's", bearer(keys.token("alice", tenant="t1")))
    hs256.remember("users/bob/memoryState", "bob's", bearer(keys.token("bob", tenant="t2")))
    admin = bearer(keys.token("svc-ingest", tenant="t1", admin=True))

    assert [e.ask for e in hs256.state("users/alice/memoryState", admin).recent] == ["alice's"]
    hs256.remember("users/alice/memoryState", "from the service", admin)
    refused = hs256.refused(admin, "users/bob/memoryState")
    assert (refused.code, refused.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
    assert refused.message == "users/bob/memoryState does not exist"

    hs256.remember("users/carol/memoryState", "new", admin)
    assert tenant_of(hs256.database_url, "carol") == "t1"
    assert tenant_of(hs256.database_url, "bob") == "t2"


def test_the_admin_role_may_come_in_a_scope_claim(hs256: AuthServer) -> None:
    keys = hs256.keys
    hs256.remember("users/alice/memoryState", "a", bearer(keys.token("alice", tenant="t1")))
    scoped = bearer(keys.token("svc", tenant="t1", scope="read mnemo:admin write"))
    assert len(hs256.state("users/alice/memoryState", scoped).recent) == 1
    not_admin = bearer(keys.token("svc", tenant="t1", scope="read mnemo:admins"))
    assert hs256.refused(not_admin).code is grpc.StatusCode.NOT_FOUND


def test_a_user_is_not_found_for_the_same_user_id_of_another_tenant(hs256: AuthServer) -> None:
    keys = hs256.keys
    hs256.remember(
        "users/alice/memoryState", "t1's alice", bearer(keys.token("alice", tenant="t1"))
    )
    impostor = bearer(keys.token("alice", tenant="t2"))
    refused = hs256.refused(impostor)
    assert (refused.code, refused.message) == (
        grpc.StatusCode.NOT_FOUND,
        "users/alice/memoryState does not exist",
    )
    write = rpc_failure(
        hs256.working_memory.RememberExchange,
        wm.RememberExchangeRequest(name="users/alice/memoryState", exchange=wm.Exchange(ask="x")),
        metadata=impostor,
        timeout=10,
    )
    assert write.code is grpc.StatusCode.NOT_FOUND
    own = bearer(keys.token("alice", tenant="t1"))
    assert [e.ask for e in hs256.state("users/alice/memoryState", own).recent] == ["t1's alice"]
