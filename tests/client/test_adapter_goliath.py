"""goliath's memory factory over Mnemo, blocking and asyncio, through real servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo.adapters.goliath import (
    AsyncMnemoMemory,
    Exchange,
    MemoryState,
    MnemoMemory,
    empty_memory,
    merge_states,
    mnemo_memory,
)
from mnemo.client import (
    AsyncMnemoClient,
    EtagMismatchError,
    InvalidArgumentError,
    MnemoClient,
)
from tests.support.databases import SqliteDatabases
from tests.support.subprocess_server import SubprocessServer, subprocess_server

pytestmark = pytest.mark.timeout(60)

FAST_RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 300),
]

PARKING = Exchange("Where did I park?", "Level 3, row F.", 1_764_000_000_123)
MEETING = Exchange("Remember my meeting", "Noted: Tuesday 10:00.", 1_764_000_100_000)


@pytest.fixture
def mnemo(mnemo_target: str) -> Iterator[MnemoClient]:
    with MnemoClient(mnemo_target) as client:
        yield client


def test_each_conversation_id_gets_its_own_memory(mnemo: MnemoClient, user: str) -> None:
    factory = mnemo_memory(mnemo, user=user)
    default, work = factory(None), factory("work")

    assert isinstance(default, MnemoMemory)
    assert factory("work") is not work
    assert default.load() == empty_memory()
    default.save(MemoryState(summary="Parks at the office.", recent=[PARKING]))
    work.save(MemoryState(summary="Weekly meeting.", recent=[MEETING]))

    assert default.load() == MemoryState(
        "Parks at the office.", [PARKING], etag=mnemo.get_memory_state(user).etag
    )
    assert work.load().recent == [MEETING]
    stored = mnemo.get_memory_state(user, "work")
    assert (stored.summary, stored.recent[0].ask) == ("Weekly meeting.", MEETING.ask)
    assert stored.recent[0].at.ToMilliseconds() == MEETING.at


def test_a_save_after_another_devices_save_merges_instead_of_overwriting(
    mnemo: MnemoClient, user: str
) -> None:
    phone, tablet = mnemo_memory(mnemo, user=user)("c1"), mnemo_memory(mnemo, user=user)("c1")
    phone.save(MemoryState(summary="first", recent=[]))
    phone.load()
    tablet.load()
    phone.save(MemoryState(summary="first", recent=[PARKING]))
    tablet.save(MemoryState(summary="tablet", recent=[MEETING]))

    assert phone.load() == MemoryState("tablet", [PARKING, MEETING], etag=tablet.etag or "")
    assert merge_states(None, MemoryState("", [MEETING]), MemoryState("s", [PARKING]), 1) == (
        MemoryState("s", [MEETING])
    )


def test_without_conflict_retries_a_concurrent_save_raises(mnemo: MnemoClient, user: str) -> None:
    factory = mnemo_memory(mnemo, user=user, max_conflict_retries=0)
    phone, tablet = factory("c1"), factory("c1")
    phone.save(MemoryState(summary="first", recent=[]))
    phone.load()
    tablet.load()
    phone.save(MemoryState(summary="phone", recent=[PARKING]))

    with pytest.raises(EtagMismatchError):
        tablet.save(MemoryState(summary="tablet", recent=[MEETING]))
    assert tablet.load().summary == "phone"


def test_an_unreachable_server_reads_as_empty_and_a_bad_id_raises(user: str) -> None:
    with MnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as unreachable:
        memory = mnemo_memory(unreachable, user=user)("c1")
        assert memory.load() == empty_memory()
        assert memory.etag is None

    with pytest.raises(InvalidArgumentError):
        with MnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as any_client:
            mnemo_memory(any_client, user=user)("not/an/id").load()


@pytest.fixture
def restartable(sqlite_databases: SqliteDatabases, tmp_path: Path) -> Iterator[SubprocessServer]:
    with subprocess_server(sqlite_databases.fresh(tmp_path), log_dir=tmp_path / "logs") as server:
        yield server


def test_a_save_after_a_degraded_load_keeps_what_it_could_not_read(
    restartable: SubprocessServer, user: str
) -> None:
    with MnemoClient(restartable.target, options=FAST_RECONNECT, timeout=5) as mnemo:
        factory = mnemo_memory(mnemo, user=user)
        factory("kept").save(MemoryState(summary="precious", recent=[PARKING]))
        blind = factory("kept")

        restartable.stop()
        assert blind.load() == empty_memory()
        assert blind.etag is None
        restartable.start()

        blind.save(MemoryState(summary="new summary", recent=[MEETING]))
        loaded = factory("kept").load()
        assert (loaded.summary, loaded.recent) == ("new summary", [PARKING, MEETING])


async def test_the_asyncio_memory_loads_saves_and_merges(mnemo_target: str, user: str) -> None:
    async with AsyncMnemoClient(mnemo_target) as mnemo:
        factory = mnemo_memory(mnemo, user=user)
        default, other = factory(None), factory(None)
        assert isinstance(default, AsyncMnemoMemory)

        assert await default.load() == empty_memory()
        await default.save(MemoryState(summary="first", recent=[]))
        await other.load()
        await default.save(MemoryState(summary="first", recent=[PARKING]))
        await other.save(MemoryState(summary="async", recent=[MEETING]))

        loaded = await default.load()
        assert (loaded.summary, loaded.recent) == ("async", [PARKING, MEETING])
        assert (await factory("named").load()) == empty_memory()


async def test_the_asyncio_memory_degrades_to_empty(user: str) -> None:
    async with AsyncMnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as unreachable:
        assert await mnemo_memory(unreachable, user=user)("c1").load() == empty_memory()
