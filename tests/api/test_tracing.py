"""OpenTelemetry tracing through a real server: each call's server span (the
gRPC instrumentation) is the parent of the spans of the store transactions
it ran; without tracing configured the server records no span."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc
from mnemo_server.config import ConfigError, resolve
from mnemo_server.observability.wiring import Observability
from tests.api.changes import Watch
from tests.support.server import ServerThread, server_settings

CREATE = "/mnemo.v1.MemoryService/CreateMemory"
GET = "/mnemo.v1.MemoryService/GetMemory"
WATCH = "/mnemo.v1.SyncService/WatchChanges"
WAIT_S = 30.0

sqlite_only = pytest.mark.parametrize("backend", ["sqlite"])


def _calls(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = memories_pb2_grpc.MemoryServiceStub(channel)
        stub.CreateMemory(
            mm.CreateMemoryRequest(parent="users/alice", memory=mm.Memory(text="likes tea"))
        )
        with pytest.raises(grpc.RpcError):
            stub.GetMemory(mm.GetMemoryRequest(name="users/alice/memories/nope"))


def _spans_named(exporter: InMemorySpanExporter, *names: str) -> dict[str, list[ReadableSpan]]:
    """The finished spans by name once each of ``names`` has one (bounded:
    a server span ends just after the client got its answer)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        found: dict[str, list[ReadableSpan]] = {}
        for span in exporter.get_finished_spans():
            found.setdefault(span.name, []).append(span)
        if all(name in found for name in names) or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@sqlite_only
def test_a_call_span_is_the_parent_of_its_store_transaction_spans(
    database_url: str, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, spans = exporter
    thread = ServerThread(server_settings(database_url), tracer_provider=provider)
    target = thread.start()
    try:
        _calls(target)
        found = _spans_named(spans, CREATE, GET, "mnemo.store.write", "mnemo.store.read")
    finally:
        thread.stop()
    (create,) = found[CREATE]
    (get,) = found[GET]
    assert create.kind is trace.SpanKind.SERVER
    assert (create.attributes or {})["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]
    assert (get.attributes or {})["rpc.grpc.status_code"] == grpc.StatusCode.NOT_FOUND.value[0]
    create_ctx, get_ctx = create.get_span_context(), get.get_span_context()
    assert create_ctx is not None and get_ctx is not None
    writes = [s for s in found["mnemo.store.write"] if s.parent is not None]
    under_create = [s for s in writes if s.parent.span_id == create_ctx.span_id]  # type: ignore[union-attr]
    assert len(under_create) == 1
    (write,) = under_create
    assert write.get_span_context().trace_id == create_ctx.trace_id  # type: ignore[union-attr]
    assert write.attributes is not None
    assert write.attributes["mnemo.store.batch_operations"] >= 1  # type: ignore[operator]
    assert write.attributes["db.system.name"] == "sqlite"
    assert create.start_time is not None and create.end_time is not None
    assert write.start_time is not None and write.end_time is not None
    assert create.start_time <= write.start_time <= write.end_time <= create.end_time
    reads = [s for s in found["mnemo.store.read"] if s.parent is not None]
    assert [s.parent.span_id for s in reads if s.parent] == [get_ctx.span_id]


@sqlite_only
def test_without_tracing_configured_no_span_is_recorded(
    database_url: str, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, spans = exporter
    # Even with a global provider set, an unconfigured server makes no span.
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another global tracer provider was set earlier in this process")
    thread = ServerThread(server_settings(database_url))
    target = thread.start()
    try:
        assert thread.server.observability.tracing is None
        _calls(target)
    finally:
        thread.stop()
    assert spans.get_finished_spans() == ()


def test_the_tracing_flag_and_an_otlp_provider_the_server_owns() -> None:
    assert resolve({}, {}).tracing == "none"
    assert resolve({}, {"MNEMO_TRACING": "otlp"}).tracing == "otlp"
    with pytest.raises(ConfigError, match="--tracing"):
        resolve({"tracing": "zipkin"}, {})
    built = Observability.build(metrics=False, tracing="otlp", access_log=False)
    assert built.tracing is not None and built.owns_provider
    assert len(built.interceptors()) == 1  # the gRPC instrumentation's, no metrics
    asyncio.run(built.close())  # nothing to export: returns at once
    assert Observability.build(metrics=False, tracing="none", access_log=False).interceptors() == []


@sqlite_only
def test_a_change_watch_is_traced_and_served(
    database_url: str, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    # WatchChanges writes with context.write (a coroutine, not an async
    # generator): the instrumentation must await it, not iterate it.
    provider, spans = exporter
    thread = ServerThread(server_settings(database_url), tracer_provider=provider)
    target = thread.start()
    try:
        watch = Watch(target, user="alice")
        try:
            assert watch.next_event().HasField("heartbeat")
        finally:
            watch.close()
        found = _spans_named(spans, WATCH)
    finally:
        thread.stop()
    (span,) = found[WATCH]
    assert span.kind is trace.SpanKind.SERVER
