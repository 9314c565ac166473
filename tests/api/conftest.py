"""API test fixtures: a real server per test over ``database_url`` (SQLite and PostgreSQL).

``database_url`` (tests/conftest.py) is parametrized over the backends and
gives each test a fresh, migrated database, so every API test runs on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import (
    conversations_pb2_grpc,
    governance_pb2_grpc,
    memories_pb2_grpc,
    working_memory_pb2_grpc,
)
from tests.support.server import running_server
from tests.support.tokens import SigningKeys


@pytest.fixture
def server(database_url: str) -> Iterator[str]:
    """The target ``127.0.0.1:PORT`` of a server over this test's database."""
    with running_server(database_url) as target:
        yield target


@pytest.fixture
def channel(server: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server) as channel:
        yield channel


@pytest.fixture
def working_memory(channel: grpc.Channel) -> working_memory_pb2_grpc.WorkingMemoryServiceStub:
    return working_memory_pb2_grpc.WorkingMemoryServiceStub(channel)


@pytest.fixture
def conversations(channel: grpc.Channel) -> conversations_pb2_grpc.ConversationServiceStub:
    return conversations_pb2_grpc.ConversationServiceStub(channel)


@pytest.fixture
def memories(channel: grpc.Channel) -> memories_pb2_grpc.MemoryServiceStub:
    return memories_pb2_grpc.MemoryServiceStub(channel)


@pytest.fixture
def governance(channel: grpc.Channel) -> governance_pb2_grpc.GovernanceServiceStub:
    return governance_pb2_grpc.GovernanceServiceStub(channel)


@pytest.fixture
def jwt_target(database_url: str, tmp_path: Path) -> Iterator[tuple[str, SigningKeys]]:
    """A server that verifies HS256 JWTs, and the keys that sign its tokens."""
    keys = SigningKeys.hs256()
    with running_server(database_url, **keys.server_settings(tmp_path)) as target:
        yield target, keys
