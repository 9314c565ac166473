"""The server's surface: the services it lists, health, and the not-yet-implemented RPCs."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mnemo.v1 import sync_pb2
from tests.support.rpc_errors import rpc_failure

MNEMO_SERVICES = {
    "mnemo.v1.WorkingMemoryService",
    "mnemo.v1.ConversationService",
    "mnemo.v1.MemoryService",
    "mnemo.v1.GovernanceService",
    "mnemo.v1.SyncService",
}
PENDING: dict[str, tuple[ServiceDescriptor, str, tuple[str, ...]]] = {
    # () = every method.
    "SyncService": (sync_pb2.DESCRIPTOR.services_by_name["SyncService"], "sync change feed", ()),
}


def _listed_services(channel: grpc.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    return {s.name for s in response.list_services_response.service}


def test_reflection_lists_the_mnemo_services_health_and_itself(channel: grpc.Channel) -> None:
    assert _listed_services(channel) == MNEMO_SERVICES | {
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    }


def test_reflection_serves_the_mnemo_descriptors(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(
        file_containing_symbol="mnemo.v1.ConversationService"
    )
    (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    assert response.file_descriptor_response.file_descriptor_proto


def test_health_is_serving_overall_and_per_service(channel: grpc.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", *sorted(MNEMO_SERVICES)):
        response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert response.status == health_pb2.HealthCheckResponse.SERVING, service


def _pending_methods() -> Iterator[tuple[ServiceDescriptor, MethodDescriptor, str]]:
    for descriptor, capability, pending in PENDING.values():
        for method in descriptor.methods:
            if not pending or method.name in pending:
                yield descriptor, method, capability


def _call_raw(channel: grpc.Channel, path: str, method: MethodDescriptor) -> None:
    """Call ``path`` with an empty request message (valid for every type)."""
    if method.client_streaming and method.server_streaming:
        list(channel.stream_stream(path, None, None)(iter([b""]), timeout=10))
    elif method.client_streaming:
        channel.stream_unary(path, None, None)(iter([b""]), timeout=10)
    elif method.server_streaming:
        list(channel.unary_stream(path, None, None)(b"", timeout=10))
    else:
        channel.unary_unary(path, None, None)(b"", timeout=10)


def test_every_rpc_of_the_pending_services_is_unimplemented(channel: grpc.Channel) -> None:
    methods = list(_pending_methods())
    assert len(methods) >= 2
    kinds = {(m.client_streaming, m.server_streaming) for _, m, _ in methods}
    assert {(False, False), (False, True)} <= kinds
    for service, method, capability in methods:
        path = f"/{service.full_name}/{method.name}"
        failure = rpc_failure(_call_raw, channel, path, method)
        assert failure.code is grpc.StatusCode.UNIMPLEMENTED, path
        assert (failure.domain, failure.reason) == ("mnemo.v1", "NOT_IMPLEMENTED"), path
        assert failure.metadata == {"capability": capability, "method": path}
        assert capability in failure.message and method.name in failure.message
