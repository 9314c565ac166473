"""The benchmark's data set, loaded through the public API (``ImportUserData``).

Each *data user* ``data-K`` holds ``MEMORIES`` long-term memories (short
generated facts, ``tests.support.memory_corpus``) and one conversation,
``history``, of ``MESSAGES`` messages (the same one-message JSON that
``AppendMessages`` sends in the write cells). One ``ImportUserData`` client
stream per user loads it in one transaction, as ``mnemo import`` of an export
would. The read cells (list / stream messages, get / list / recall memories,
build context) read these users; the peers get the same shapes.

The recall cells (lexical and fused recall, build context) read one more
user, ``RECALL_USER``, with ``RECALL_MEMORIES`` memories saved by
``BatchCreateMemories`` with a vector each, named as the server's default
embedder's vectors (``local``) but of random values, as ``bench/recall.py``
saves them: what a search costs does not depend on the values, and
embedding 10,000 texts first would take the model most of a minute.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from bench.shapes import (
    MEMORIES,
    MESSAGES,
    RECALL_MEMORIES,
    RECALL_USER,
    corpus,
    memory_id,
    message,
)
from mnemo.client import MnemoClient
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc as mm_grpc

CONVERSATION = "history"
IMPORT_TIMEOUT_S = 900.0


def message_json(author: int, index: int) -> str:
    """The one message of an append, as JSON (``bench.shapes.message``)."""
    return json.dumps(message(author, index))


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def records(user: str, memories: int, messages: int, seed: int) -> Iterator[gv.ExportRecord]:
    """Export records of one user: a conversation of ``messages`` messages and
    ``memories`` memories (texts from a seeded corpus)."""
    now = _now()
    if messages:
        conversation = f"users/{user}/conversations/{CONVERSATION}"
        yield gv.ExportRecord(
            conversation=cv.Conversation(name=conversation, create_time=now, update_time=now)
        )
        for position in range(messages):
            yield gv.ExportRecord(
                message=cv.HistoryMessage(
                    name=f"{conversation}/messages/{position}",
                    position=position,
                    create_time=now,
                    message_json=message_json(0, position),
                )
            )
    texts = corpus(seed)
    for index in range(memories):
        yield gv.ExportRecord(
            memory=mm.Memory(
                name=f"users/{user}/memories/{memory_id(index)}",
                text=texts.sentence(),
                create_time=now,
                update_time=now,
            )
        )


def load(
    target: str, users: list[str], memories: int = MEMORIES, messages: int = MESSAGES
) -> float:
    """Import the data of ``users`` (one ``ImportUserData`` each); the seconds it took."""
    started = time.perf_counter()
    with MnemoClient(target, timeout=IMPORT_TIMEOUT_S) as client:
        for n, user in enumerate(users):
            client.import_user_data(user, records(user, memories, messages, seed=n))
    return time.perf_counter() - started


def default_model() -> tuple[str, int]:
    """The name and size of the vectors of the server's default embedder."""
    from mnemo_server.embedders import load_embedder

    model = load_embedder("local")
    assert model is not None
    return model.model, model.dimensions


def recall_batches(
    user: str, size: int, batch: int, model: str, dimensions: int, seed: int
) -> list[mm.BatchCreateMemoriesRequest]:
    """``size`` memories of ``user`` (corpus sentences, random vectors of
    ``model``) as ``BatchCreateMemories`` requests of ``batch`` entries."""
    parent = f"users/{user}"
    texts = corpus(seed)
    requests = []
    for start in range(0, size, batch):
        entries = [
            mm.CreateMemoryRequest(
                parent=parent,
                memory_id=f"m{n:07}",
                memory=mm.Memory(
                    text=texts.sentence(),
                    embedding=mm.Embedding(model=model, values=texts.vector(dimensions)),
                ),
            )
            for n in range(start, min(size, start + batch))
        ]
        requests.append(
            mm.BatchCreateMemoriesRequest(
                parent=parent, requests=entries, request_id=f"load-{start}"
            )
        )
    return requests


def load_recall_user(target: str, size: int = RECALL_MEMORIES, batch: int = 1000) -> float:
    """Save ``RECALL_USER``'s memories (module doc); the seconds it took."""
    model, dimensions = default_model()
    requests = recall_batches(RECALL_USER, size, batch, model, dimensions, seed=size)
    started = time.perf_counter()
    with grpc.insecure_channel(target) as channel:
        stub = mm_grpc.MemoryServiceStub(channel)
        for request in requests:
            reply = stub.BatchCreateMemories(request, timeout=IMPORT_TIMEOUT_S)
            if len(reply.memories) != len(request.requests):
                raise RuntimeError("a batch saved fewer entries than it sent")
    return time.perf_counter() - started


EMBEDDED_TIMEOUT_S = 180.0


def wait_embedded(url: str, timeout: float = EMBEDDED_TIMEOUT_S) -> None:
    """Wait until the server over ``url`` has no entry left to embed in the
    background (its ``embedding_backlog`` is empty: read from the database,
    as ``bench/embedding_backlog.py`` does); at most ``timeout`` seconds."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        deadline = time.monotonic() + timeout
        with engine.connect() as conn:
            while time.monotonic() < deadline:
                left = conn.execute(text("SELECT count(*) FROM embedding_backlog")).scalar()
                conn.rollback()
                if not left:
                    return
                time.sleep(0.5)
        raise RuntimeError(f"the server still had entries to embed after {timeout:.0f} s")
    finally:
        engine.dispose()
