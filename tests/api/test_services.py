"""The server's surface: the services it lists and health."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

MNEMO_SERVICES = {
    "mnemo.v1.WorkingMemoryService",
    "mnemo.v1.ConversationService",
    "mnemo.v1.MemoryService",
    "mnemo.v1.GovernanceService",
    "mnemo.v1.SyncService",
    "mnemo.v1.DocumentService",
    "mnemo.v1.CheckpointService",
    "mnemo.v1.AgentStateService",
}


def _listed_services(channel: grpc.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    return {s.name for s in response.list_services_response.service}


def test_reflection_lists_the_mnemo_services_health_and_itself(channel: grpc.Channel) -> None:
    assert _listed_services(channel) == MNEMO_SERVICES | {
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
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
