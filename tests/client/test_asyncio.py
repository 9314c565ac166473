"""The asyncio client used natively: ``async with``, ``async for``, concurrent calls."""

from __future__ import annotations

import asyncio

from mnemo.client import AsyncMnemoClient


def test_async_with_async_for_and_gather(mnemo_target: str, user: str) -> None:
    async def scenario() -> tuple[list[int], list[str], int]:
        async with AsyncMnemoClient(mnemo_target) as mnemo:
            appended = await asyncio.gather(
                *(
                    mnemo.append_messages(user, "s1", [{"role": "user", "content": f"m{n}"}])
                    for n in range(20)
                )
            )
            positions = sorted(response.messages[0].position for response in appended)
            contents = [message.text async for message in mnemo.stream_messages(user, "s1")]
            conversations = [c async for c in mnemo.list_conversations(user)]
            return positions, contents, len(conversations)

    positions, contents, conversation_count = asyncio.run(scenario())

    assert positions == list(range(20))
    assert sorted(contents) == sorted(f"m{n}" for n in range(20))
    assert conversation_count == 1
