"""Shared builders for the long-term memory API tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import memories_pb2 as pb
from mnemo.v1 import memories_pb2_grpc

Stub = memories_pb2_grpc.MemoryServiceStub

USER = "users/u1"
C1 = "users/u1/conversations/c1"
C2 = "users/u1/conversations/c2"


def create(stub: Stub, text: str, *, parent: str = USER, **fields: Any) -> pb.Memory:
    """Save one entry; ``memory_id``, ``request_id`` and ``origin_conversation``
    go on the request, the rest on the memory."""
    options = {
        k: fields.pop(k) for k in ("memory_id", "request_id", "origin_conversation") if k in fields
    }
    request = pb.CreateMemoryRequest(
        parent=parent, memory=pb.Memory(text=text, **fields), **options
    )
    memory: pb.Memory = stub.CreateMemory(request).memory
    return memory


def vector(*values: float, model: str = "test-4d") -> pb.Embedding:
    return pb.Embedding(model=model, values=values)


def listed(stub: Stub, parent: str = USER, **filters: Any) -> list[pb.Memory]:
    """Every entry ``ListMemories`` returns with ``filters``, page by page."""
    result: list[pb.Memory] = []
    token = ""
    while True:
        page = stub.ListMemories(pb.ListMemoriesRequest(parent=parent, page_token=token, **filters))
        result.extend(page.memories)
        token = page.next_page_token
        if not token:
            return result


def versions(stub: Stub, name: str) -> list[pb.Memory]:
    response = stub.ListMemoryVersions(pb.ListMemoryVersionsRequest(name=name))
    return list(response.versions)


def recall(
    stub: Stub, query: str, *, parent: str = USER, **fields: Any
) -> list[pb.RecallMemoriesResponse]:
    return list(stub.RecallMemories(pb.RecallMemoriesRequest(parent=parent, query=query, **fields)))


def texts(hits: Sequence[pb.RecallMemoriesResponse]) -> list[str]:
    return [h.memory.text for h in hits]


def chat(*turns: tuple[str, str]) -> list[cv.HistoryMessage]:
    """Anvia-shaped messages: ``("user", "My name is Ada")``."""
    return [
        cv.HistoryMessage(message_json=json.dumps({"role": role, "content": content}))
        for role, content in turns
    ]
