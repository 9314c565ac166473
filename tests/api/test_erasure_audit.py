"""The tenant's audit record of an erasure (issue 27), through a real server on both stores.

An admin's ``DeleteUserData`` of a user of its tenant leaves one record
(``ListUserErasures`` of ``tenants/{tenant}``): who erased, whom, when, and
the receipt's counts, outside the erased user's data (``user_erasures`` has
no ``user_id`` column), so the record outlives later erasures of that user
and of others. A user erasing their own data leaves none. Only an admin of
that very tenant may list them; under ``--auth none`` (on loopback) anyone
may, and the records name no one as the eraser. Pages are newest first and
their tokens bound to the tenant.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import grpc

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, governance_pb2_grpc, memories_pb2_grpc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.store.schema import user_erasures
from tests.api.history import message
from tests.support.rpc_errors import rpc_failure
from tests.support.tokens import SigningKeys, bearer

Metadata = tuple[tuple[str, str], ...] | None
Governance = governance_pb2_grpc.GovernanceServiceStub
TIMEOUT_S = 30.0


def _write(channel: grpc.Channel, user: str, text: str, metadata: Metadata = None) -> None:
    """A memory entry and a conversation message of ``user``."""
    memories_pb2_grpc.MemoryServiceStub(channel).CreateMemory(
        mm.CreateMemoryRequest(parent=f"users/{user}", memory=mm.Memory(text=text)),
        metadata=metadata,
        timeout=TIMEOUT_S,
    )
    conversations_pb2_grpc.ConversationServiceStub(channel).AppendMessages(
        cv.AppendMessagesRequest(
            conversation=f"users/{user}/conversations/c1", messages=[message(text)]
        ),
        metadata=metadata,
        timeout=TIMEOUT_S,
    )


def _erase(stub: Governance, user: str, metadata: Metadata = None) -> gv.DeleteUserDataResponse:
    response: gv.DeleteUserDataResponse = stub.DeleteUserData(
        gv.DeleteUserDataRequest(parent=f"users/{user}"), metadata=metadata, timeout=TIMEOUT_S
    )
    return response


def _erasures(
    stub: Governance, parent: str, metadata: Metadata = None, page_size: int = 0
) -> list[gv.UserErasure]:
    """Every record ``ListUserErasures`` returns, page by page (newest first)."""
    found: list[gv.UserErasure] = []
    token = ""
    while True:
        page = stub.ListUserErasures(
            gv.ListUserErasuresRequest(parent=parent, page_size=page_size, page_token=token),
            metadata=metadata,
            timeout=TIMEOUT_S,
        )
        assert page_size == 0 or len(page.erasures) <= page_size
        found.extend(page.erasures)
        token = page.next_page_token
        if not token:
            return found


def _whom(records: Sequence[gv.UserErasure]) -> list[str]:
    return [r.user for r in records]


def _micros() -> int:
    return time.time_ns() // 1_000


def test_an_admins_erasure_leaves_the_tenant_a_record_that_outlives_the_user(
    jwt_target: tuple[str, SigningKeys],
) -> None:
    target, keys = jwt_target
    alice = bearer(keys.token("alice", tenant="t1"))
    bob = bearer(keys.token("bob", tenant="t1"))
    admin = bearer(keys.token("svc", tenant="t1", admin=True))
    other_admin = bearer(keys.token("ops2", tenant="t2", admin=True))
    assert "user_id" not in user_erasures.c  # so that no erasure deletes a record
    with grpc.insecure_channel(target) as channel:
        stub = governance_pb2_grpc.GovernanceServiceStub(channel)
        _write(channel, "alice", "Alice likes tea", alice)
        _write(channel, "bob", "Bob likes coffee", bob)
        _write(channel, "dave", "Dave likes cocoa", bearer(keys.token("dave", tenant="t2")))

        before = _micros()
        receipt = _erase(stub, "alice", admin)
        assert receipt.deleted_rows["memories"] == 1 and receipt.deleted_rows["messages"] == 1
        (first,) = _erasures(stub, "tenants/t1", admin)
        assert (first.user, first.erased_by, first.by_admin) == ("users/alice", "svc", True)
        assert dict(first.deleted_rows) == dict(receipt.deleted_rows)
        erased_at = first.erase_time.ToMicroseconds()
        assert before <= erased_at <= receipt.delete_time.ToMicroseconds()

        # The erased user's own data is gone: the record is not part of it.
        exported = stub.ExportUserData(
            gv.ExportUserDataRequest(parent="users/alice"), metadata=alice, timeout=TIMEOUT_S
        )
        assert list(exported) == []

        # Erasing alice again finds nothing: no new record, the first one stays.
        again = _erase(stub, "alice", admin)
        assert not any(again.deleted_rows.values())
        assert _erasures(stub, "tenants/t1", admin) == [first]

        # Alice comes back and is erased again; then bob: each erasure adds
        # its own record and none removes another.
        _write(channel, "alice", "Alice likes green tea", alice)
        second = _erase(stub, "alice", admin)
        third = _erase(stub, "bob", admin)
        records = _erasures(stub, "tenants/t1", admin)
        assert _whom(records) == ["users/bob", "users/alice", "users/alice"]
        assert records[2] == first
        assert dict(records[1].deleted_rows) == dict(second.deleted_rows)
        assert dict(records[0].deleted_rows) == dict(third.deleted_rows)
        assert records[1].erase_time.ToMicroseconds() > erased_at

        # Another tenant's records are its own, and only its admins read them.
        assert _erasures(stub, "tenants/t2", other_admin) == []
        for who, parent in (
            (other_admin, "tenants/t1"),
            (alice, "tenants/t1"),
            (admin, "tenants/t2"),
            (admin, "tenants/-"),
        ):
            failure = rpc_failure(
                stub.ListUserErasures,
                gv.ListUserErasuresRequest(parent=parent),
                metadata=who,
                timeout=TIMEOUT_S,
            )
            assert (failure.code, failure.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "PERMISSION_DENIED",
            ), parent


def test_a_user_erasing_their_own_data_leaves_no_record(
    jwt_target: tuple[str, SigningKeys],
) -> None:
    target, keys = jwt_target
    alice = bearer(keys.token("alice", tenant="t1"))
    admin = bearer(keys.token("svc", tenant="t1", admin=True))
    with grpc.insecure_channel(target) as channel:
        stub = governance_pb2_grpc.GovernanceServiceStub(channel)
        _write(channel, "alice", "Alice likes tea", alice)
        _write(channel, "svc", "The service's own note", admin)
        assert any(_erase(stub, "alice", alice).deleted_rows.values())
        assert any(_erase(stub, "svc", admin).deleted_rows.values())  # an admin, for itself
        assert _erasures(stub, "tenants/t1", admin) == []


def test_erasures_without_authentication_are_paged_newest_first(channel: grpc.Channel) -> None:
    """Under ``--auth none`` (on loopback) an erasure is an operator's: a
    record without an eraser; ``tenants/-`` lists the users without a tenant."""
    stub = governance_pb2_grpc.GovernanceServiceStub(channel)
    users = [f"u{i}" for i in range(5)]
    for user in users:
        _write(channel, user, f"{user} likes tea")
    receipts = {user: _erase(stub, user) for user in users}
    _erase(stub, "never-seen")  # nothing deleted: no record

    records = _erasures(stub, "tenants/-", page_size=2)
    assert _whom(records) == [f"users/{u}" for u in reversed(users)]
    for record in records:
        assert (record.erased_by, record.by_admin) == ("", False)
        assert dict(record.deleted_rows) == dict(receipts[record.user.split("/")[1]].deleted_rows)
    assert _erasures(stub, "tenants/t1") == []

    first = stub.ListUserErasures(gv.ListUserErasuresRequest(parent="tenants/-", page_size=2))
    assert _whom(first.erasures) == ["users/u4", "users/u3"] and first.next_page_token
    follow = stub.ListUserErasures(
        gv.ListUserErasuresRequest(parent="tenants/-", page_token=first.next_page_token)
    )
    assert _whom(follow.erasures) == ["users/u2", "users/u1", "users/u0"]
    assert not follow.next_page_token

    foreign = rpc_failure(
        stub.ListUserErasures,
        gv.ListUserErasuresRequest(parent="tenants/t1", page_token=first.next_page_token),
    )
    assert (foreign.code, foreign.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )
    size = rpc_failure(
        stub.ListUserErasures, gv.ListUserErasuresRequest(parent="tenants/-", page_size=-1)
    )
    assert (size.code, size.fields) == (grpc.StatusCode.INVALID_ARGUMENT, ("page_size",))
    for parent in ("", "users/u1", "tenants/", "tenants/-x", "tenants/t1/users/u1"):
        failure = rpc_failure(stub.ListUserErasures, gv.ListUserErasuresRequest(parent=parent))
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_NAME",
        ), parent
