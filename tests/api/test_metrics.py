"""The Prometheus metrics port (``--metrics-listen``) scraped after real calls
to a real server: RPC counts and histograms by method and code, calls in
flight, store transactions and batches, the pool, watchers, change-feed lag
and rate-limited calls; and the port's flags."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc
from mnemo_server.config import ConfigError, resolve
from tests.api.changes import Watch
from tests.support.embedding import wait_until_embedded
from tests.support.metrics import Samples, scrape, scrape_text, series, value
from tests.support.server import ServerThread, server_settings

WAIT_S = 30.0
CREATE = "/mnemo.v1.MemoryService/CreateMemory"
GET = "/mnemo.v1.MemoryService/GetMemory"
CHECK = "/grpc.health.v1.Health/Check"
WATCH = "/mnemo.v1.SyncService/WatchChanges"

# The port is the same on both backends; the store metrics are checked on SQLite.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"])


@pytest.fixture
def observed(database_url: str) -> Iterator[tuple[str, int]]:
    """A server with a metrics port: its target and the metrics port."""
    thread = ServerThread(server_settings(database_url, metrics_listen="127.0.0.1:0"))
    target = thread.start()
    try:
        assert thread.server.metrics_port is not None
        yield target, thread.server.metrics_port
    finally:
        thread.stop()


def settled(port: int) -> Samples:
    """Scrape once no call is in flight and no watch runs (bounded).

    An aborted call's status reaches the client before the server records
    the call (``context.abort`` sends it, then raises through the
    interceptors), so a scrape right after a failed call may miss it.
    """
    deadline = time.monotonic() + WAIT_S
    while True:
        samples = scrape(port)
        in_flight = sum(series(samples, "mnemo_rpc_in_flight").values())
        done = in_flight == 0 and value(samples, "mnemo_watchers") == 0
        if done or time.monotonic() > deadline:
            return samples
        time.sleep(0.02)


def _create(stub: memories_pb2_grpc.MemoryServiceStub, user: str, text: str) -> None:
    stub.CreateMemory(mm.CreateMemoryRequest(parent=f"users/{user}", memory=mm.Memory(text=text)))


def _code_of_get(stub: memories_pb2_grpc.MemoryServiceStub, name: str) -> grpc.StatusCode:
    try:
        stub.GetMemory(mm.GetMemoryRequest(name=name))
    except grpc.RpcError as error:
        code: grpc.StatusCode = error.code()
        return code
    return grpc.StatusCode.OK


def _histogram_is_consistent(samples: Samples, name: str, **labels: str) -> float:
    """The count of histogram ``name{labels}`` after checking its buckets
    grow with ``le`` and end at the count."""
    buckets = sorted(
        (float(dict(key)["le"]), found)
        for key, found in series(samples, f"{name}_bucket", **labels).items()
    )
    assert buckets, f"no buckets of {name}{labels}"
    counts = [found for _, found in buckets]
    assert counts == sorted(counts)
    count = value(samples, f"{name}_count", **labels)
    assert buckets[-1] == (float("inf"), count)
    return count


@sqlite_only
def test_a_scrape_after_real_calls_counts_them_by_method_and_code(
    observed: tuple[str, int],
) -> None:
    target, port = observed
    with grpc.insecure_channel(target) as channel:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        memories = memories_pb2_grpc.MemoryServiceStub(channel)
        _create(memories, "alice", "likes tea")
        _create(memories, "alice", "lives in Lyon")
        assert _code_of_get(memories, "users/alice/memories/nope") is grpc.StatusCode.NOT_FOUND
        assert _code_of_get(memories, "not a name") is grpc.StatusCode.INVALID_ARGUMENT
    samples = settled(port)

    handled = "mnemo_rpc_handled_total"
    assert value(samples, handled, method=CHECK, code="OK") == 1
    assert value(samples, handled, method=CREATE, code="OK") == 2
    assert value(samples, handled, method=GET, code="NOT_FOUND") == 1
    assert value(samples, handled, method=GET, code="INVALID_ARGUMENT") == 1
    assert value(samples, handled, method=GET, code="OK") == 0
    duration = "mnemo_rpc_duration_seconds"
    assert _histogram_is_consistent(samples, duration, method=CREATE, code="OK") == 2
    assert _histogram_is_consistent(samples, duration, method=GET, code="NOT_FOUND") == 1
    for method in (CHECK, CREATE, GET):
        assert value(samples, "mnemo_rpc_in_flight", method=method) == 0
    # Every label of every RPC series is a method or a code: no user, no name.
    for (name, labels), _ in samples.items():
        if name.startswith("mnemo_rpc_"):
            assert {key for key, _ in labels} <= {"method", "code", "le"}
            assert "alice" not in str(labels)

    # The two creates each committed a write transaction of their own or shared one.
    writes = _histogram_is_consistent(
        samples, "mnemo_store_transaction_duration_seconds", kind="write"
    )
    batched = value(samples, "mnemo_store_batch_operations_sum", kind="write")
    assert writes >= 1 and batched >= 2
    assert _histogram_is_consistent(samples, "mnemo_store_batch_operations", kind="write") == writes
    assert value(samples, "mnemo_store_transaction_duration_seconds_count", kind="read") >= 1
    # SQLite: one read lane per --read-connections, the write lane, the inline reads.
    assert value(samples, "mnemo_db_pool_connections") == 2 + 1 + 1
    assert 0 <= value(samples, "mnemo_db_pool_checked_out") <= 4
    assert value(samples, "mnemo_watchers") == 0
    assert value(samples, "mnemo_rate_limited_total") == 0


@sqlite_only
def test_the_watcher_gauge_goes_up_and_down_and_a_live_change_has_a_lag(
    observed: tuple[str, int],
) -> None:
    target, port = observed
    watch = Watch(target, user="alice")
    try:
        assert watch.next_event().HasField("heartbeat")  # live now
        live = scrape(port)
        assert value(live, "mnemo_watchers") == 1
        assert value(live, "mnemo_rpc_in_flight", method=WATCH) == 1
        with grpc.insecure_channel(target) as channel:
            _create(memories_pb2_grpc.MemoryServiceStub(channel), "alice", "likes tea")
        change = watch.next_event()
        assert change.HasField("change")
    finally:
        watch.close()
    samples = settled(port)
    assert value(samples, "mnemo_watchers") == 0
    assert _histogram_is_consistent(samples, "mnemo_change_feed_lag_seconds") == 1
    assert value(samples, "mnemo_change_feed_lag_seconds_sum") >= 0
    ended = series(samples, "mnemo_rpc_handled_total", method=WATCH)
    assert sum(ended.values()) == 1
    assert value(samples, "mnemo_rpc_in_flight", method=WATCH) == 0


@sqlite_only
def test_rate_limited_calls_are_counted(database_url: str) -> None:
    burst, calls = 3, 5
    settings = server_settings(
        database_url,
        metrics_listen="127.0.0.1:0",
        rate_limit_per_second=0.01,  # no token comes back within the test
        rate_limit_burst=burst,
    )
    thread = ServerThread(settings)
    target = thread.start()
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memories_pb2_grpc.MemoryServiceStub(channel)
            codes = [_code_of_get(stub, "users/bob/memories/nope") for _ in range(calls)]
        assert thread.server.metrics_port is not None
        samples = settled(thread.server.metrics_port)
    finally:
        thread.stop()
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == calls - burst
    assert value(samples, "mnemo_rate_limited_total") == calls - burst
    assert (
        value(samples, "mnemo_rpc_handled_total", method=GET, code="RESOURCE_EXHAUSTED")
        == calls - burst
    )
    assert value(samples, "mnemo_rpc_handled_total", method=GET, code="NOT_FOUND") == burst


def test_the_background_embedder_reports_what_it_stored_and_its_backlog(
    database_url: str,
) -> None:
    saves = 5
    settings = server_settings(database_url, metrics_listen="127.0.0.1:0", embedder="hashing:16")
    thread = ServerThread(settings)
    target = thread.start()
    try:
        with grpc.insecure_channel(target) as channel:
            stub = memories_pb2_grpc.MemoryServiceStub(channel)
            for n in range(saves):
                stub.CreateMemory(
                    mm.CreateMemoryRequest(parent="users/u1", memory=mm.Memory(text=f"fact {n}"))
                )
        wait_until_embedded(database_url)
        assert thread.server.metrics_port is not None
        samples = settled(thread.server.metrics_port)
    finally:
        thread.stop()
    assert value(samples, "mnemo_embedded_entries_total") == saves
    assert value(samples, "mnemo_embedding_backlog") == 0
    assert value(samples, "mnemo_embedding_failures_total") == 0
    assert 1 <= value(samples, "mnemo_embedding_batch_seconds_count") <= saves


@sqlite_only
def test_each_server_has_its_own_registry_and_serves_the_text_format(
    observed: tuple[str, int], database_url: str, tmp_path: Path
) -> None:
    target, port = observed
    with grpc.insecure_channel(target) as channel:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    other_url = f"sqlite:///{tmp_path / 'other.db'}"
    other = ServerThread(server_settings(other_url, metrics_listen="127.0.0.1:0"))
    other.start()
    try:
        assert other.server.metrics_port not in (None, port)
        assert (
            value(
                scrape(other.server.metrics_port or 0),
                "mnemo_rpc_handled_total",
                method=CHECK,
                code="OK",
            )
            == 0
        )
    finally:
        other.stop()
    assert value(scrape(port), "mnemo_rpc_handled_total", method=CHECK, code="OK") == 1
    assert "# TYPE mnemo_rpc_duration_seconds histogram" in scrape_text(port)


@sqlite_only
def test_no_metrics_port_unless_configured(database_url: str) -> None:
    thread = ServerThread(server_settings(database_url))
    thread.start()
    try:
        assert thread.server.metrics_port is None
        assert thread.server.observability.metrics is None
    finally:
        thread.stop()


@sqlite_only
def test_a_taken_metrics_port_fails_the_start(database_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        thread = ServerThread(server_settings(database_url, metrics_listen=f"127.0.0.1:{port}"))
        with pytest.raises(RuntimeError) as raised:
            thread.start()
        assert str(raised.value) == (
            f"cannot listen on 127.0.0.1:{port}: the address is in use (another process listens"
            f" on port {port}): stop it or choose another with --metrics-listen HOST:PORT"
            " (or MNEMO_METRICS_LISTEN)"
        )


def test_the_metrics_listen_flag_and_its_loopback_rule() -> None:
    assert resolve({}, {}).metrics_listen == ""
    assert resolve({"metrics_listen": "127.0.0.1:9464"}, {}).metrics_listen == "127.0.0.1:9464"
    assert resolve({}, {"MNEMO_METRICS_LISTEN": "[::1]:9464"}).metrics_listen == "[::1]:9464"
    with pytest.raises(ConfigError, match="--metrics-listen"):
        resolve({"metrics_listen": "9464"}, {})
    with pytest.raises(ConfigError, match="not a loopback address"):
        resolve({"metrics_listen": "0.0.0.0:9464"}, {})
    allowed = resolve(
        {"metrics_listen": "0.0.0.0:9464", "allow_unauthenticated_non_loopback": "true"}, {}
    )
    assert allowed.metrics_listen == "0.0.0.0:9464"
