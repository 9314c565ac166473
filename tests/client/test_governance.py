"""Governance through a real server, with the blocking and the asyncio client:
consent, the memory switch, events listed and watched."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator
from typing import cast

import pytest

from mnemo.client import (
    AsyncMnemoClient,
    EtagMismatchError,
    FailedPreconditionError,
    InvalidArgumentError,
    MnemoClient,
)
from mnemo.client import _governance as governance
from mnemo.v1 import governance_pb2 as gv

WAIT_S = 20.0


def test_consent_gates_memory_and_cancels_candidates(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    assert client.get_consent(user).state == gv.CONSENT_STATE_GRANTED
    client.create_memory(user, "Lives in Oslo")
    client.propose_memory_candidates(user, [{"text": "Likes tea"}])

    withdrawn = client.set_consent(user, "withdrawn", policy_version="p-1")
    assert withdrawn.cancelled_candidates == 1
    assert (withdrawn.consent.state, withdrawn.consent.policy_version) == (
        gv.CONSENT_STATE_WITHDRAWN,
        "p-1",
    )
    assert other_client.get_consent(user) == withdrawn.consent
    with pytest.raises(FailedPreconditionError) as refused:
        client.create_memory(user, "Works in Bergen")
    assert refused.value.reason == "MEMORY_CONSENT_WITHDRAWN"
    assert list(client.recall_memories(user, "Oslo")) == []
    assert [m.text for m in client.list_memories(user)] == ["Lives in Oslo"]

    client.set_consent(user, "granted", policy_version="p-2")
    client.create_memory(user, "Works in Bergen")
    with pytest.raises(InvalidArgumentError):
        client.set_consent(user, "maybe")  # type: ignore[arg-type]


def test_the_memory_switch(client: MnemoClient, user: str) -> None:
    initial = client.get_memory_settings(user)
    assert (initial.enabled, initial.etag) == (True, "")
    off = client.update_memory_settings(user, enabled=False)
    assert not off.enabled and off.etag
    with pytest.raises(FailedPreconditionError) as refused:
        client.list_memories_page(user)
    assert refused.value.reason == "MEMORY_DISABLED"
    with pytest.raises(EtagMismatchError):
        client.update_memory_settings(user, enabled=True, etag="stale")
    assert client.update_memory_settings(user, enabled=True, etag=off.etag).enabled
    assert client.list_memories_page(user).items == []


def test_events_are_listed_newest_first_and_filtered(client: MnemoClient, user: str) -> None:
    saved = client.create_memory(user, "Lives in Oslo").memory
    client.delete_memory(user, saved.name)
    events = list(client.list_events(user, page_size=1))
    assert [e.type for e in events] == [gv.EVENT_TYPE_MEMORY_DELETED, gv.EVENT_TYPE_MEMORY_SAVED]
    assert all(e.attributes["memory"] == saved.name for e in events)
    page = client.list_events_page(user, types=["memory_saved"])
    assert ([e.type for e in page.items], page.next_page_token) == (
        [gv.EVENT_TYPE_MEMORY_SAVED],
        "",
    )
    tenant = {e.name for e in client.list_events(tenant="")}
    assert {e.name for e in events} <= tenant
    with pytest.raises(InvalidArgumentError):
        client.list_events_page(user, types=["memory_forgotten"])  # type: ignore[list-item]


def test_an_operators_erasure_leaves_an_audit_record(client: MnemoClient, user: str) -> None:
    client.create_memory(user, "Lives in Oslo")
    receipt = client.delete_user_data(user)
    records = [r for r in client.list_user_erasures("") if r.user == f"users/{user}"]
    assert len(records) == 1  # under --auth none: by an operator, not the user
    assert dict(records[0].deleted_rows) == dict(receipt.deleted_rows)
    page = client.list_user_erasures_page("", page_size=1)
    assert len(page.items) == 1


def test_a_parent_is_one_user_or_one_tenant() -> None:
    assert governance.events_parent("u1", None) == "users/u1"
    assert governance.events_parent(None, "t1") == "tenants/t1"
    assert governance.events_parent(None, "") == "tenants/-"
    for user, tenant in ((None, None), ("u1", "t1")):
        with pytest.raises(InvalidArgumentError):
            governance.events_parent(user, tenant)


def _saves_until_seen(client: MnemoClient, user: str, seen: threading.Event) -> str:
    """Save probes until the watch has seen one; the last probe's name."""
    name = ""
    for n in range(int(WAIT_S / 0.05)):
        # Sameness (issue 26): a repeated "probe" stores nothing and emits no event, so vary it.
        name = client.create_memory(user, f"probe {n}").memory.name
        if seen.wait(0.05):
            return name
    raise AssertionError("the watch never saw a save")


def test_watch_events_with_the_blocking_client(mnemo_target: str, user: str) -> None:
    seen = threading.Event()
    received: list[gv.Event] = []
    with MnemoClient(mnemo_target) as watching, MnemoClient(mnemo_target) as writing:
        stream = watching.watch_events(user, types=["memory_saved"], timeout=3 * WAIT_S)

        def consume() -> None:
            for event in stream:
                received.append(event)
                seen.set()
                if event.attributes.get("key") == "last":
                    return

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        _saves_until_seen(writing, user, seen)
        last = writing.create_memory(user, "The end", key="last").memory
        reader.join(WAIT_S)
        assert not reader.is_alive()
    assert received[-1].attributes["memory"] == last.name
    assert {e.type for e in received} == {gv.EVENT_TYPE_MEMORY_SAVED}


async def test_watch_events_with_the_asyncio_client(mnemo_target: str, user: str) -> None:
    async with AsyncMnemoClient(mnemo_target) as mnemo:
        stream = cast(AsyncGenerator[gv.Event, None], mnemo.watch_events(user, timeout=3 * WAIT_S))
        first = asyncio.ensure_future(anext(stream))
        for n in range(int(WAIT_S / 0.05)):
            # Sameness (issue 26): a repeated "probe" stores nothing and emits no event, so vary it.
            saved = (await mnemo.create_memory(user, f"probe {n}")).memory
            done, _ = await asyncio.wait([first], timeout=0.05)
            if done:
                break
        event = await asyncio.wait_for(first, WAIT_S)
        assert event.type == gv.EVENT_TYPE_MEMORY_SAVED
        assert event.attributes["memory"].startswith(f"users/{user}/memories/")
        assert saved.name.startswith(f"users/{user}/memories/")
        await stream.aclose()
