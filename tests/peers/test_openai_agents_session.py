"""``MnemoSession`` against a live Mnemo server (started by ``openai_agents_plugin``):
what the SDK's own tests cannot see — the stored form, the tail reads, retries,
races and cancellation."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from agents.memory import Session, SessionSettings
from grpc_proxy import grpc_proxy

from mnemo.client import AsyncMnemoClient, HistoryCompactedError, MnemoClient
from mnemo.integrations.openai_agents import ITEM_KEY, MnemoSession, conversation_id

ITEMS: list[Any] = [
    {"role": "user", "content": "Où est ma voiture ? 🚗"},
    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Level 3.", "annotations": [], "logprobs": []}],
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21°C"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think."}]},
    {"type": "item_reference", "id": "ref_1"},
    {"role": "user", "content": "nested", "extra": {"n": [1, 2.5, None, True], "s": "\u0000"}},
]


@pytest.fixture
def user() -> str:
    return f"u-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def mnemo(mnemo_target: str) -> Iterator[MnemoClient]:
    with MnemoClient(mnemo_target) as client:
        yield client


def _session(target: str, user: str, session_id: str = "s1", **kwargs: Any) -> MnemoSession:
    return MnemoSession(session_id, user=user, target=target, **kwargs)


def test_it_is_a_session_and_items_come_back_equal(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    session = _session(mnemo_target, user)
    assert isinstance(session, Session)

    async def scenario() -> list[Any]:
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        return await session.get_items()

    assert asyncio.run(scenario()) == ITEMS
    stored = list(mnemo.list_messages(user, "s1"))
    assert [json.loads(m.message_json)[ITEM_KEY] for m in stored] == ITEMS
    assert [(m.role, m.text) for m in stored[:6]] == [
        ("user", "Où est ma voiture ? 🚗"),
        ("system", "Be brief."),
        ("assistant", "Level 3."),
        ("assistant", 'get_weather({"city": "Paris"})'),
        ("tool", "sunny, 21°C"),
        ("assistant", "Think."),
    ]
    conversation = mnemo.get_conversation(user, "s1")
    assert dict(conversation.metadata) == {"origin": "openai-agents", "session_id": "s1"}
    session.close()


def test_get_items_with_a_limit_reads_only_the_tail(mnemo_target: str, user: str) -> None:
    starts: list[int] = []

    class Recording(MnemoClient):
        def list_messages(self, *args: Any, **kwargs: Any) -> Any:
            starts.append(kwargs["start_position"])
            return super().list_messages(*args, **kwargs)

    items = [{"role": "user", "content": f"m{n}"} for n in range(30)]
    with Recording(mnemo_target) as client:
        session = MnemoSession(
            "s1", user=user, client=client, session_settings=SessionSettings(limit=4)
        )

        async def scenario() -> tuple[list[Any], ...]:
            await session.add_items(items)
            return (
                await session.get_items(limit=3),
                await session.get_items(),  # session_settings.limit
                await session.get_items(limit=100),
                await session.get_items(limit=0),
            )

        three, four, all_of_them, none = asyncio.run(scenario())
    assert (three, four, all_of_them, none) == (items[-3:], items[-4:], items, [])
    assert starts == [27, 26, 0]


def test_a_tail_read_that_a_pop_overtook_is_read_again(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    items = [{"role": "user", "content": f"m{n}"} for n in range(10)]

    def laptop_pops_first(method: str, attempt: int) -> None:
        if method == "ListMessages" and attempt == 1:
            mnemo.pop_messages(user, "s1", 5)

    with grpc_proxy(mnemo_target) as proxy:
        session = _session(proxy.target, user)
        asyncio.run(session.add_items(items))
        proxy.before = laptop_pops_first
        tail = asyncio.run(session.get_items(limit=3))
        session.close()

    assert tail == items[2:5]
    assert proxy.attempts["ListMessages"] == 2


def test_a_new_session_has_nothing_to_read_pop_or_clear(mnemo_target: str, user: str) -> None:
    session = _session(mnemo_target, user, "never-written")

    async def scenario() -> tuple[Any, ...]:
        return (
            await session.get_items(),
            await session.get_items(limit=2),
            await session.pop_item(),
            await session.clear_session(),
        )

    assert asyncio.run(scenario()) == ([], [], None, None)


def test_pop_and_clear(mnemo_target: str, mnemo: MnemoClient, user: str) -> None:
    session = _session(mnemo_target, user)

    async def scenario() -> tuple[Any, ...]:
        await session.add_items(ITEMS[:3])
        popped = await session.pop_item()
        left = await session.get_items()
        await session.clear_session()
        return popped, left, await session.get_items(), await session.pop_item()

    popped, left, cleared, nothing = asyncio.run(scenario())
    assert (popped, left, cleared, nothing) == (ITEMS[2], ITEMS[:2], [], None)
    assert mnemo.get_conversation(user, "s1").message_count == 0


def test_a_retried_add_after_a_lost_answer_stores_the_items_once(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    with grpc_proxy(mnemo_target) as proxy:
        proxy.lose = lambda method, attempt: method == "AppendMessages" and attempt == 1
        session = _session(proxy.target, user)
        asyncio.run(session.add_items(ITEMS[:2]))
        session.close()

    assert proxy.attempts["AppendMessages"] == 2  # the client's retry on UNAVAILABLE
    assert [m.position for m in mnemo.list_messages(user, "s1")] == [0, 1]


def test_a_retried_pop_after_a_lost_answer_pops_once(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    mnemo.append_messages(user, "s1", [{"role": "user", "content": f"m{n}"} for n in range(3)])
    with grpc_proxy(mnemo_target) as proxy:
        proxy.lose = lambda method, attempt: method == "PopMessages" and attempt == 1
        session = _session(proxy.target, user)
        popped = asyncio.run(session.pop_item())
        session.close()

    assert popped == {"role": "user", "content": "m2"}  # a foreign message, as the SDK's
    assert proxy.attempts["PopMessages"] == 2
    assert mnemo.get_conversation(user, "s1").message_count == 2


def test_a_pop_that_loses_a_race_pops_the_new_last_item(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    phone = _session(mnemo_target, user)
    asyncio.run(phone.add_items(ITEMS[:2]))

    def laptop_writes_first(method: str, attempt: int) -> None:
        if method == "PopMessages" and attempt == 1:
            asyncio.run(_session(mnemo_target, user).add_items([ITEMS[4]]))

    with grpc_proxy(mnemo_target) as proxy:
        proxy.before = laptop_writes_first
        session = _session(proxy.target, user)
        popped = asyncio.run(session.pop_item())
        session.close()

    assert popped == ITEMS[4]
    assert proxy.attempts["PopMessages"] == 2  # refused with POSITION_MISMATCH, then popped
    assert asyncio.run(phone.get_items()) == ITEMS[:2]


def test_a_pop_into_a_compacted_prefix_raises(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    session = _session(mnemo_target, user)
    asyncio.run(session.add_items(ITEMS[:2]))
    snapshot = mnemo.snapshot_history(user, "s1")
    mnemo.replace_history_prefix(
        user,
        "s1",
        revision=snapshot.revision,
        message_count=2,
        replacement=[{"role": "system", "content": "summary"}],
    )

    with pytest.raises(HistoryCompactedError):
        asyncio.run(session.pop_item())
    assert asyncio.run(session.get_items()) == ITEMS[:2]


def test_a_cancelled_add_still_finishes_and_then_raises(
    mnemo_target: str, mnemo: MnemoClient, user: str
) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold(method: str, attempt: int) -> None:
        if method == "AppendMessages":
            entered.set()
            assert release.wait(10)

    async def scenario(session: MnemoSession) -> bool:
        task = asyncio.create_task(session.add_items(ITEMS[:1]))
        assert await asyncio.to_thread(entered.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        still_running = not task.done()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return still_running

    with grpc_proxy(mnemo_target) as proxy:
        proxy.before = hold
        session = _session(proxy.target, user)
        assert asyncio.run(scenario(session))
        session.close()
    assert [m.position for m in mnemo.list_messages(user, "s1")] == [0]


def test_many_items_go_in_several_appends_in_order(mnemo_target: str, user: str) -> None:
    items = [{"role": "user", "content": f"m{n}"} for n in range(1201)]
    with grpc_proxy(mnemo_target) as proxy:
        session = _session(proxy.target, user)

        async def scenario() -> list[Any]:
            await session.add_items(items)
            return await session.get_items()

        assert asyncio.run(scenario()) == items
        session.close()
    assert proxy.attempts["AppendMessages"] == 3


def test_session_ids_map_to_distinct_valid_conversation_ids() -> None:
    ids = ["plain_id-1.x:y", "a b", "a~20b", "x~a~20b", "_lead", "", "é", "s" * 128, "s" * 200]
    mapped = [conversation_id(i) for i in ids]
    assert mapped[:3] == ["plain_id-1.x:y", "x~a~20b", "x~a~7E20b"]
    assert len(set(mapped)) == len(ids)
    assert all(0 < len(m) <= 128 for m in mapped)


def test_odd_session_ids_work_end_to_end(mnemo_target: str, mnemo: MnemoClient, user: str) -> None:
    session = _session(mnemo_target, user, "chat/42 ✨")
    asyncio.run(session.add_items(ITEMS[:1]))
    assert asyncio.run(session.get_items()) == ITEMS[:1]
    assert mnemo.get_conversation(user, conversation_id("chat/42 ✨")).message_count == 1


def test_a_shared_async_client_is_used_and_left_open(mnemo_target: str, user: str) -> None:
    async def scenario() -> list[Any]:
        async with AsyncMnemoClient(mnemo_target) as client:
            with MnemoSession("s1", user=user, client=client) as session:
                await session.add_items(ITEMS[:2])
            reopened = MnemoSession("s1", user=user, client=client)
            return [await reopened.pop_item(), *await reopened.get_items()]

    assert asyncio.run(scenario()) == [ITEMS[1], ITEMS[0]]


def test_a_closed_session_refuses_every_call(mnemo_target: str, user: str) -> None:
    session = _session(mnemo_target, user)
    session.close()
    session.close()
    for call in (
        session.get_items(),
        session.add_items([]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(RuntimeError, match="MnemoSession is closed"):
            asyncio.run(call)
