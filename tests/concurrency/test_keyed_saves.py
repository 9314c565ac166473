"""Concurrent keyed CreateMemory calls, through a real server, on both
backends: however the saves of one (scope, key) interleave, exactly one entry
per key stays unarchived (the newest) and every other one is archived."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc

from mnemo.v1 import memories_pb2 as pb
from tests.api.memories import USER, Stub, listed

WRITERS = 6
KEYS = 4
SAVES_PER_KEY = 5
WAIT_S = 60


def _save_all(target: str, writer: int) -> list[str]:
    """Save ``SAVES_PER_KEY`` entries for every key, keys interleaved; returns
    the names."""
    names = []
    with grpc.insecure_channel(target) as channel:
        stub = Stub(channel)
        for n in range(SAVES_PER_KEY):
            for key in range(KEYS):
                memory = pb.Memory(text=f"writer {writer} save {n}", key=f"key-{key}")
                response = stub.CreateMemory(
                    pb.CreateMemoryRequest(parent=USER, memory=memory), timeout=WAIT_S
                )
                names.append(response.memory.name)
    return names


def test_concurrent_keyed_saves_leave_one_unarchived_entry_per_key(
    server: str, memories: Stub
) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        saved = [
            name
            for names in pool.map(_save_all, [server] * WRITERS, range(WRITERS))
            for name in names
        ]
    assert len(set(saved)) == WRITERS * KEYS * SAVES_PER_KEY

    current = listed(memories)
    assert sorted(m.key for m in current) == [f"key-{key}" for key in range(KEYS)]
    for key in range(KEYS):
        every = listed(memories, include_archived=True, key=f"key-{key}")
        assert len(every) == WRITERS * SAVES_PER_KEY
        unarchived = [m for m in every if not m.HasField("archive_time")]
        assert [m.name for m in unarchived] == [m.name for m in current if m.key == f"key-{key}"]
        newest = max(every, key=lambda m: (m.create_time.ToNanoseconds(), m.name))
        assert unarchived[0].create_time == newest.create_time
    assert {
        m.name
        for key in range(KEYS)
        for m in listed(memories, include_archived=True, key=f"key-{key}")
    } == set(saved)
