"""gecx-chat's hybrid adapter: a local SQLite cache in front of a real Mnemo server that
is stopped and restarted, and changes from another device arriving through the feed."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo.adapters._steps import RetryPolicy
from mnemo.adapters.gecx import MemoryEntry, ServerMemoryAdapter, create_server_memory_adapter
from mnemo.adapters.gecx_hybrid import (
    AsyncHybridMemoryAdapter,
    HybridMemoryAdapter,
    create_hybrid_memory_adapter,
)
from mnemo.adapters.sqlite_cache import SqliteMemoryCache
from mnemo.client import AsyncMnemoClient, MnemoClient, UnavailableError
from tests.support.databases import SqliteDatabases
from tests.support.server import running_server
from tests.support.subprocess_server import SubprocessServer, subprocess_server

pytestmark = pytest.mark.timeout(90)

FAST_RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 300),
]
NO_RETRY = RetryPolicy(attempts=1)
HEARTBEAT = "0.3"
WAIT_S = 30.0


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; fail after ``WAIT_S`` seconds."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {WAIT_S}s: {what}")
        time.sleep(0.05)


@pytest.fixture
def database_file(sqlite_databases: SqliteDatabases, tmp_path: Path) -> str:
    return sqlite_databases.fresh(tmp_path)


@pytest.fixture
def restartable(database_file: str, tmp_path: Path) -> Iterator[SubprocessServer]:
    with subprocess_server(
        database_file, "--watch-heartbeat-seconds", HEARTBEAT, log_dir=tmp_path / "logs"
    ) as server:
        yield server


@pytest.fixture
def device(restartable: SubprocessServer) -> Iterator[MnemoClient]:
    """This device's client: short deadlines, few retries, quick reconnects."""
    with MnemoClient(
        restartable.target, timeout=3, max_attempts=2, options=FAST_RECONNECT
    ) as client:
        yield client


def _remote(client: MnemoClient, user: str) -> ServerMemoryAdapter:
    return create_server_memory_adapter(client, user=user, retry=NO_RETRY)


def _answers(call: Callable[[], object]) -> bool:
    """Whether ``call`` went through (``False`` on ``UNAVAILABLE``, while reconnecting)."""
    try:
        call()
    except UnavailableError:
        return False
    return True


def _texts(entries: Sequence[MemoryEntry]) -> list[str]:
    return sorted(e.text for e in entries)


def test_rollback_undoes_every_write_the_stopped_server_missed(
    restartable: SubprocessServer, device: MnemoClient, user: str, tmp_path: Path
) -> None:
    adapter = create_hybrid_memory_adapter(
        remote=_remote(device, user), cache=SqliteMemoryCache(tmp_path / "cache.db")
    )
    assert isinstance(adapter, HybridMemoryAdapter)
    kept = adapter.save("Prefers window seats.")
    other = adapter.save("Flies from Lyon.", conversation_id="trip")
    assert _texts(adapter.cached()) == ["Flies from Lyon.", "Prefers window seats."]

    restartable.stop()
    with pytest.raises(UnavailableError):
        adapter.save("Has a cat.")
    with pytest.raises(UnavailableError):
        adapter.update(kept.id, text="Prefers aisle seats.")
    with pytest.raises(UnavailableError):
        adapter.delete(other.id)

    assert _texts(adapter.cached()) == ["Flies from Lyon.", "Prefers window seats."]
    assert adapter.pending() == []
    assert _texts(adapter.list()) == ["Flies from Lyon.", "Prefers window seats."]
    assert [h.entry.id for h in adapter.recall("window seats")] == [kept.id]
    assert [h.entry.id for h in adapter.recall("lyon", conversation_id="trip")] == [other.id]
    assert adapter.recall("lyon") == []  # conversation entries only in their conversation
    assert adapter.get(kept.id) == kept

    assert restartable.start() == device.target
    wait_until(lambda: _answers(_remote(device, user).list), "the channel reconnects")
    adapter.save("Has a dog.")
    server_side = _remote(device, user).list()
    assert _texts(server_side) == ["Flies from Lyon.", "Has a dog.", "Prefers window seats."]


def test_keep_queues_the_writes_and_sync_sends_them_once_the_server_is_back(
    restartable: SubprocessServer, device: MnemoClient, user: str, tmp_path: Path
) -> None:
    adapter = create_hybrid_memory_adapter(
        remote=_remote(device, user),
        cache=tmp_path / "cache.db",
        on_remote_failure="keep",
    )
    seat = adapter.save("Prefers window seats.")
    lyon = adapter.save("Flies from Lyon.")

    restartable.stop()
    cat = adapter.save("Has a cat.", key="pet")
    adapter.update(seat.id, text="Prefers aisle seats.")
    adapter.delete(lyon.id)
    adapter.update(cat.id, pinned=True)

    assert [w.operation for w in adapter.pending()] == ["create", "update", "delete", "update"]
    assert _texts(adapter.list()) == ["Has a cat.", "Prefers aisle seats."]
    assert [h.entry.id for h in adapter.recall("cat")] == [cat.id]
    with pytest.raises(UnavailableError):
        adapter.sync()

    assert restartable.start() == device.target
    wait_until(lambda: _answers(adapter.sync), "sync succeeds once the channel reconnects")

    assert adapter.pending() == []
    server_side = _remote(device, user).list(include_archived=True)
    assert _texts(server_side) == ["Has a cat.", "Prefers aisle seats."]
    by_text = {e.text: e for e in server_side}
    assert by_text["Has a cat."].id == cat.id and by_text["Has a cat."].pinned
    assert _texts(adapter.cached()) == ["Has a cat.", "Prefers aisle seats."]
    assert all(e.etag for e in adapter.cached())


def test_the_follower_resyncs_kept_writes_when_the_server_is_back(
    restartable: SubprocessServer, device: MnemoClient, user: str, tmp_path: Path
) -> None:
    adapter = create_hybrid_memory_adapter(
        remote=_remote(device, user), cache=tmp_path / "cache.db", on_remote_failure="keep"
    )
    adapter.start()
    try:
        restartable.stop()
        offline = adapter.save("Saved while offline.")
        assert [w.id for w in adapter.pending()] == [offline.id]
        restartable.start()

        wait_until(lambda: adapter.pending() == [], "the follower sent the kept save")
        assert [e.id for e in _remote(device, user).list()] == [offline.id]
        wait_until(lambda: bool(adapter.cache.get(user, offline.id).etag), "confirmed")  # type: ignore[union-attr]
    finally:
        adapter.close()


def test_a_queued_write_loses_to_a_newer_change_on_the_server(
    mnemo_target: str, user: str, tmp_path: Path
) -> None:
    cache = SqliteMemoryCache(tmp_path / "cache.db")
    with (
        MnemoClient(mnemo_target) as online,
        MnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as offline,
    ):
        here = create_hybrid_memory_adapter(remote=_remote(online, user), cache=cache)
        away = create_hybrid_memory_adapter(
            remote=_remote(offline, user), cache=cache, on_remote_failure="keep"
        )
        edited, deleted = here.save("Lives in Lyon."), here.save("Has a cat.")
        away.update(edited.id, text="Lives in Lyon, offline edit.")
        away.delete(deleted.id)
        assert [w.operation for w in here.pending()] == ["update", "delete"]

        elsewhere = _remote(online, user)
        elsewhere.update(edited.id, text="Lives in Porto.")
        elsewhere.update(deleted.id, pinned=True)
        here.sync()

        assert here.pending() == []
        assert _texts(elsewhere.list()) == ["Has a cat.", "Lives in Porto."]
        assert _texts(here.cached()) == ["Has a cat.", "Lives in Porto."]


JAN = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
JUN = datetime(2026, 6, 1, tzinfo=UTC)


def test_a_duplicate_save_leaves_the_servers_entry_alone_in_the_cache(
    mnemo_target: str, user: str, tmp_path: Path
) -> None:
    with MnemoClient(mnemo_target) as phone:
        adapter = create_hybrid_memory_adapter(
            remote=_remote(phone, user), cache=tmp_path / "cache.db"
        )
        cat = adapter.save("Has a cat.", event_time=JAN)
        assert phone.get_memory(user, cat.id).event_time.ToDatetime(UTC) == JAN
        again = adapter.save("has a CAT")
        assert again.id == cat.id  # the server's entry, not the optimistic one
        assert [(e.id, e.text) for e in adapter.cached()] == [(cat.id, "Has a cat.")]
        assert [e.id for e in _remote(phone, user).list(include_archived=True)] == [cat.id]

        now = datetime.now(UTC)
        dog = adapter.save("Has a dog.")  # no time given: the device's clock at the save
        assert dog.event_time is not None and abs(dog.event_time - now) < timedelta(seconds=5)

        porto = adapter.save("Lives in Porto.", key="home", event_time=JUN)
        lyon = adapter.save("Lives in Lyon.", key="home", event_time=JAN)
        assert lyon.archived and lyon.valid_until == JUN  # historical: Porto stays current
        live = [e.id for e in adapter.cached() if e.key == "home" and not e.archived]
        assert live == [porto.id]


def test_a_queued_save_keeps_its_time_and_a_queued_duplicate_becomes_the_servers_entry(
    mnemo_target: str, user: str, tmp_path: Path
) -> None:
    cache = SqliteMemoryCache(tmp_path / "cache.db")
    with (
        MnemoClient(mnemo_target) as online,
        MnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as offline,
    ):
        here = create_hybrid_memory_adapter(remote=_remote(online, user), cache=cache)
        away = create_hybrid_memory_adapter(
            remote=_remote(offline, user), cache=cache, on_remote_failure="keep"
        )
        cat = here.save("Has a cat.")
        porto = here.save("Lives in Porto.", key="home", event_time=JUN)
        oslo = away.save("Flies to Oslo.")  # said now, sent below
        copy = away.save("has a cat")
        away.update(copy.id, pinned=True)
        lyon = away.save("Lives in Lyon.", key="home", event_time=JAN)
        assert lyon.archived  # a later fact of the key is cached: stored as an earlier version
        assert sorted(e.text for e in here.cached() if not e.archived) == [
            "Flies to Oslo.",
            "Has a cat.",
            "Lives in Porto.",
            "has a cat",
        ]

        here.sync()

        assert here.pending() == []
        stored = online.get_memory(user, oslo.id)
        assert stored.event_time.ToDatetime(UTC) == oslo.event_time  # when said, not when sent
        assert stored.create_time.ToDatetime(UTC) > stored.event_time.ToDatetime(UTC)
        assert here.cache.get(user, copy.id) is None
        kept = here.cache.get(user, cat.id)
        assert kept is not None and kept.pinned  # the queued update followed to the server's entry
        assert online.get_memory(user, cat.id).pinned
        server_live = sorted(e.text for e in _remote(online, user).list())
        cached_live = sorted(e.text for e in here.cached() if not e.archived)
        assert server_live == cached_live == ["Flies to Oslo.", "Has a cat.", "Lives in Porto."]
        history = here.cache.get(user, lyon.id)
        assert history is not None and history.archived and history.valid_until == JUN
        assert online.get_memory(user, porto.id).HasField("archive_time") is False

        # A device whose clock ran more than a day ahead: the server's clock instead.
        ahead = (datetime.now(UTC) + timedelta(days=3)).isoformat()
        payload = {"text": "Saved on a fast clock.", "event_time": ahead, "device_time": True}
        cache.add_pending(user, "m-fast-clock", "create", payload, str(uuid.uuid4()))
        here.sync()
        fast = online.get_memory(user, "m-fast-clock")
        assert fast.event_time.ToDatetime(UTC) < datetime.now(UTC) + timedelta(minutes=1)


def test_switched_off_memory_reads_as_nothing_not_as_the_cache(
    mnemo_target: str, user: str, tmp_path: Path
) -> None:
    with MnemoClient(mnemo_target) as phone:
        adapter = create_hybrid_memory_adapter(
            remote=_remote(phone, user), cache=tmp_path / "cache.db"
        )
        saved = adapter.save("Allergic to nuts.")
        phone.update_memory_settings(user, enabled=False)

        assert (adapter.list(), adapter.recall("nuts"), adapter.get(saved.id)) == ([], [], None)
        assert [e.id for e in adapter.cached()] == [saved.id]  # kept, as the seed promises
        phone.update_memory_settings(user, enabled=True)
        assert [e.id for e in adapter.list()] == [saved.id]


@pytest.fixture
def feed_target(database_file: str) -> Iterator[str]:
    """A server with quick heartbeats and a one-second change retention, pruned often."""
    with running_server(
        database_file,
        watch_heartbeat_seconds=float(HEARTBEAT),
        change_retention_seconds=1.0,
        purge_interval_seconds=0.2,
    ) as target:
        yield target


@pytest.fixture
def phone(feed_target: str, user: str, tmp_path: Path) -> Iterator[HybridMemoryAdapter]:
    """This device's hybrid adapter, on the feed server; closed after the test."""
    with MnemoClient(feed_target) as client:
        adapter = create_hybrid_memory_adapter(
            remote=_remote(client, user), cache=tmp_path / "cache.db"
        )
        yield adapter
        adapter.close()


@pytest.fixture
def laptop(feed_target: str) -> Iterator[MnemoClient]:
    """Another device's client, on the same server."""
    with MnemoClient(feed_target) as client:
        yield client


def test_another_devices_changes_arrive_in_the_cache_through_the_feed(
    phone: HybridMemoryAdapter, laptop: MnemoClient, user: str
) -> None:
    other = _remote(laptop, user)
    before = other.save("Saved before the phone started.")
    phone.start()
    wait_until(lambda: [e.id for e in phone.cached()] == [before.id], "initial sync")

    added = other.save("Saved on the laptop.")
    wait_until(lambda: phone.cache.get(user, added.id) is not None, "the new entry")
    other.update(before.id, text="Changed on the laptop.")
    wait_until(
        lambda: _texts(phone.cached()) == ["Changed on the laptop.", "Saved on the laptop."],
        "the update",
    )
    other.delete(added.id)
    wait_until(lambda: phone.cache.get(user, added.id) is None, "the delete")
    assert phone.cache.cursor(user)

    laptop.delete_user_data(user)
    wait_until(lambda: phone.cached() == [], "the erasure emptied the cache")


def test_an_expired_cursor_is_resynced_from_a_full_list(
    phone: HybridMemoryAdapter, laptop: MnemoClient, user: str
) -> None:
    other = _remote(laptop, user)
    gone = other.save("Deleted while the phone was away.")
    phone.sync()
    cursor = phone.cache.cursor(user)
    assert cursor is not None and [e.id for e in phone.cached()] == [gone.id]

    other.delete(gone.id)
    added = other.save("Saved while the phone was away.")

    def pruned() -> bool:
        return laptop.list_changes(user).oldest_cursor > cursor + 1

    wait_until(pruned, "the changes after the phone's cursor were pruned")
    phone.sync()

    assert [e.id for e in phone.cached()] == [added.id]
    assert (phone.cache.cursor(user) or 0) > cursor


async def test_the_asyncio_hybrid_adapter(feed_target: str, user: str, tmp_path: Path) -> None:
    async with AsyncMnemoClient(feed_target) as phone:
        remote = create_server_memory_adapter(phone, user=user, retry=NO_RETRY)
        adapter = create_hybrid_memory_adapter(remote=remote, cache=tmp_path / "cache.db")
        assert isinstance(adapter, AsyncHybridMemoryAdapter)
        adapter.start()
        try:
            saved = await adapter.save("Async entry.", key="k")
            replaced = await adapter.save("Async entry, again.", key="k")
            assert [e.id for e in await adapter.list()] == [replaced.id]
            updated = await adapter.update(replaced.id, text="Async entry, updated.")
            assert [h.entry.id for h in await adapter.recall("updated")] == [updated.id]
            assert await adapter.get(saved.id) is not None
            await adapter.delete(saved.id)
            assert await adapter.sync()
            with MnemoClient(feed_target) as laptop:
                other = _remote(laptop, user).save("From the laptop.")
            deadline = time.monotonic() + WAIT_S
            while adapter.cache.get(user, other.id) is None:
                assert time.monotonic() < deadline, "the laptop's entry did not arrive"
                await _sleep(0.05)
            assert _texts([e for e in adapter.cached() if not e.archived]) == [
                "Async entry, updated.",
                "From the laptop.",
            ]
        finally:
            await adapter.close()

    async with AsyncMnemoClient("127.0.0.1:1", timeout=2, max_attempts=1) as unreachable:
        offline = create_hybrid_memory_adapter(
            remote=create_server_memory_adapter(unreachable, user=user, retry=NO_RETRY),
            cache=tmp_path / "cache.db",
        )
        assert _texts(await offline.list()) == ["Async entry, updated.", "From the laptop."]
        assert [h.entry.text for h in await offline.recall("laptop")] == ["From the laptop."]
        with pytest.raises(UnavailableError):
            await offline.save("Never stored.")
        assert len(offline.cached()) == 2


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)
