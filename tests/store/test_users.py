"""Users (UserStore): implicit creation in the caller's tenant, on every backend.

The caller is an explicit part of every command (``Command.caller``; ``None``
under ``--auth none``): these tests show that it reaches the unit of work
that creates the user and checks its tenant.
"""

from __future__ import annotations

import pytest

from mnemo_server.domain.errors import NotFound
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import MemoryDraft
from mnemo_server.domain.models import ConversationKey
from mnemo_server.store.composed import SqlStore
from tests.store.samples import exchange
from tests.store.writes import create_conversation, create_memories, save_state


async def test_users_are_created_in_the_callers_tenant(sql_store: SqlStore) -> None:
    store = sql_store
    await save_state(
        store, ConversationKey("alice", ""), "", [exchange(1)], caller=Caller("alice", "t1")
    )
    await create_memories(
        store, "bob", [("m1", MemoryDraft(text="tea"))], caller=Caller("bob", "t2")
    )
    await create_conversation(store, "carol", "c1")  # --auth none: the default tenant
    assert await store.users.tenants_of(["alice", "bob", "carol", "nobody"]) == {
        "alice": "t1",
        "bob": "t2",
        "carol": "",
    }
    assert await store.users.tenants_of([]) == {}


async def test_a_write_for_a_user_of_another_tenant_is_not_found(sql_store: SqlStore) -> None:
    """The check inside the write transaction, behind the API's look-up: in
    the writes that create a conversation and in every memory write."""
    store = sql_store
    other_conversation = ConversationKey("alice", "c2")
    await create_conversation(store, "alice", "c1", caller=Caller("alice", "t1"))
    stranger = Caller("alice", "t2")
    with pytest.raises(NotFound, match="users/alice does not"):
        await save_state(store, other_conversation, "", [exchange(1)], caller=stranger)
    with pytest.raises(NotFound):
        await create_memories(store, "alice", [("m1", MemoryDraft(text="x"))], caller=stranger)
    assert await store.users.tenants_of(["alice"]) == {"alice": "t1"}
