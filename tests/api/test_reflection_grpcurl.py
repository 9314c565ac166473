"""The real ``grpcurl`` (github.com/fullstorydev/grpcurl, pinned in the
Makefile, ``make grpcurl``), which knows the server only by reflection:
``list``, ``describe`` of a service, a method and a message (whose types in
``mnemo.v1`` and ``google.protobuf`` must resolve), a call, and each of the
two reflection services, ``grpc.reflection.v1`` and ``v1alpha``, called by
name (grpcurl's own lookups ask for ``v1`` first and fall back to
``v1alpha``, so the explicit calls are what proves both are served).

grpcurl is found through ``$MNEMO_GRPCURL`` (``make test-python`` sets it)
or under ``.tools/``; without it the tests fail and say how to get it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc

pytestmark = [pytest.mark.sqlite, pytest.mark.parametrize("backend", ["sqlite"], indirect=True)]

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def _grpcurl() -> str:
    configured = os.environ.get("MNEMO_GRPCURL")
    found = [Path(configured)] if configured else sorted(ROOT.glob(".tools/grpcurl-*/grpcurl"))
    if not found or not found[-1].is_file():
        pytest.fail("grpcurl is not installed: run `make grpcurl` (go install, pinned version)")
    return str(found[-1])


def _run(server: str, *args: str, data: str | None = None) -> str:
    """``grpcurl -plaintext [-d DATA] SERVER ARGS...``: its stdout (exit 0 asserted)."""
    options = ["-plaintext"] if data is None else ["-plaintext", "-d", data]
    done = subprocess.run(
        [_grpcurl(), *options, server, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_list_shows_every_service_and_both_reflection_versions(server: str) -> None:
    listed = _run(server, "list").split()
    assert "grpc.reflection.v1.ServerReflection" in listed
    assert "grpc.reflection.v1alpha.ServerReflection" in listed
    assert {"mnemo.v1.MemoryService", "mnemo.v1.SyncService", "grpc.health.v1.Health"} <= set(
        listed
    )
    methods = _run(server, "list", "mnemo.v1.MemoryService").split()
    assert "mnemo.v1.MemoryService.CreateMemory" in methods


def test_describe_a_service_a_method_and_messages(server: str) -> None:
    service = _run(server, "describe", "mnemo.v1.GovernanceService")
    assert service.startswith("mnemo.v1.GovernanceService is a service:")
    assert "rpc DeleteUserData ( .mnemo.v1.DeleteUserDataRequest )" in service

    method = _run(server, "describe", "mnemo.v1.MemoryService.CreateMemory")
    assert method.startswith("mnemo.v1.MemoryService.CreateMemory is a method:")
    assert "( .mnemo.v1.CreateMemoryRequest ) returns ( .mnemo.v1.CreateMemoryResponse )" in method

    request = _run(server, "describe", "mnemo.v1.CreateMemoryRequest")
    assert request.startswith("mnemo.v1.CreateMemoryRequest is a message:")
    assert ".mnemo.v1.Memory memory = 2;" in request
    memory = _run(server, "describe", "mnemo.v1.Memory")
    assert ".google.protobuf.Timestamp create_time" in memory
    timestamp = _run(server, "describe", "google.protobuf.Timestamp")
    assert "int64 seconds = 1;" in timestamp

    everything = _run(server, "describe")  # every listed service, reflection's own included
    assert "grpc.reflection.v1.ServerReflection is a service:" in everything


def test_a_call_reads_what_a_client_wrote(server: str, channel: grpc.Channel) -> None:
    memories_pb2_grpc.MemoryServiceStub(channel).CreateMemory(
        mm.CreateMemoryRequest(parent="users/u1", memory=mm.Memory(text="Lives in Oslo")),
        timeout=10,
    )
    listed = json.loads(
        _run(server, "mnemo.v1.MemoryService/ListMemories", data='{"parent": "users/u1"}')
    )
    assert [m["text"] for m in listed["memories"]] == ["Lives in Oslo"]


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_each_reflection_service_answers_by_name(server: str, version: str) -> None:
    method = f"grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
    symbol = '{"file_containing_symbol": "mnemo.v1.SyncService.WatchChanges"}'
    found = json.loads(_run(server, method, data=symbol))
    assert found["file_descriptor_response"]["file_descriptor_proto"], found
    missing = json.loads(_run(server, method, data='{"file_containing_symbol": "mnemo.v1.Nope"}'))
    assert missing["error_response"]["error_code"] == grpc.StatusCode.NOT_FOUND.value[0]
