"""Users (UserStore): implicit creation in the caller's tenant, on every backend and runner.

The caller comes from ``auth.caller`` (a ``ContextVar``): these tests also show
that it reaches the unit of work under both runners (the thread runner copies
the context into its worker thread).
"""

from __future__ import annotations

import pytest

from mnemo_server.auth.caller import Caller, CallScope, calling_as
from mnemo_server.domain.errors import NotFound
from mnemo_server.domain.memory_models import MemoryDraft
from mnemo_server.domain.models import ConversationKey
from mnemo_server.store.database import Database
from mnemo_server.store.sql import SqlStore
from tests.store.samples import exchange


def _as(user_id: str, tenant_id: str) -> CallScope:
    return CallScope(Caller(user_id, tenant_id))


async def test_users_are_created_in_the_callers_tenant(runner_database: Database) -> None:
    store = SqlStore(runner_database)
    with calling_as(_as("alice", "t1")):
        await store.save_state(ConversationKey("alice", ""), "", [exchange(1)], expected_etag=None)
    with calling_as(_as("bob", "t2")):
        await store.create_memories("bob", [("m1", MemoryDraft(text="tea"))], idempotency=None)
    await store.create_conversation(
        "carol", "c1", metadata={}, temporary=False, idempotency=None
    )  # --auth none: the default tenant
    assert await store.tenants_of(["alice", "bob", "carol", "nobody"]) == {
        "alice": "t1",
        "bob": "t2",
        "carol": "",
    }
    assert await store.tenants_of([]) == {}


async def test_a_write_for_a_user_of_another_tenant_is_not_found(
    runner_database: Database,
) -> None:
    """The check inside the write transaction, behind the API's look-up: in
    the writes that create a conversation and in every memory write."""
    store = SqlStore(runner_database)
    other_conversation = ConversationKey("alice", "c2")
    with calling_as(_as("alice", "t1")):
        await store.create_conversation(
            "alice", "c1", metadata={}, temporary=False, idempotency=None
        )
    with calling_as(_as("alice", "t2")), pytest.raises(NotFound, match="users/alice does not"):
        await store.save_state(other_conversation, "", [exchange(1)], expected_etag=None)
    with calling_as(_as("alice", "t2")), pytest.raises(NotFound):
        await store.create_memories("alice", [("m1", MemoryDraft(text="x"))], idempotency=None)
    assert await store.tenants_of(["alice"]) == {"alice": "t1"}
