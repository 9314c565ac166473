"""The benchmark's data set, loaded through the public API (``ImportUserData``).

Each *data user* ``data-K`` holds ``MEMORIES`` long-term memories (short
generated facts, ``tests.support.memory_corpus``) and one conversation,
``history``, of ``MESSAGES`` messages (the same one-message JSON that
``AppendMessages`` sends in the write cells). One ``ImportUserData`` client
stream per user loads it in one transaction, as ``mnemo import`` of an export
would. The read cells (list / stream messages, get / list / recall memories,
build context) read these users; the peers get the same shapes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from google.protobuf.timestamp_pb2 import Timestamp

from bench.shapes import MEMORIES, MESSAGES, corpus, memory_id, message
from mnemo.client import MnemoClient
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm

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
