"""The operations a load-generator worker repeats, over the generated stubs.

Each operation is a factory: given the worker's context it returns the call
the worker repeats (its argument is the worker's running call number) and,
optionally, a preparation that runs before any measured window. Writes carry
a ``request_id`` as clients send them; every worker writes to its own user
(``w-RUN-WORKER``). Reads go to the data users of ``bench.dataset`` (worker
``w`` reads ``data-(w % data_users)``), each read shaped as a client asks it.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.dataset import CONVERSATION, message_json
from bench.shapes import (
    MEMORIES,
    MESSAGES,
    PAGE,
    RECALL_MEMORIES,
    RECALL_USER,
    SENTENCE_WORDS,
    corpus,
    data_user,
    memory_id,
    sentence_query,
)
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc as cv_grpc
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import memories_pb2_grpc as mm_grpc
from mnemo.v1 import working_memory_pb2 as wm
from mnemo.v1 import working_memory_pb2_grpc as wm_grpc
from tests.support.memory_corpus import Corpus

Call = Callable[[int], Awaitable[object]]
Prepare = Callable[[], Awaitable[None]]

SUMMARY = "The user is planning a trip to Lisbon in May and prefers trains over flights."


@dataclass
class Worker:
    """What one worker's operations need: its channel, its index and run."""

    channel: grpc.aio.Channel
    index: int
    run: str
    data_users: int
    rng: random.Random = field(default_factory=random.Random)
    corpus: Corpus = field(init=False)

    def __post_init__(self) -> None:
        # Writers' texts differ from the data users' (seeds 0..DATA_USERS-1).
        self.corpus = corpus(10_000 + self.index)

    @property
    def user(self) -> str:
        return f"w-{self.run}-{self.index}"

    @property
    def reader(self) -> str:
        return data_user(self.index % self.data_users)

    def request_id(self, op: str, i: int) -> str:
        return f"{self.user}-{op}-{i}"


@dataclass(frozen=True)
class Operation:
    call: Call
    prepare: Prepare | None = None


async def _nothing() -> None:
    return None


def _awaitable(value: Any) -> Awaitable[object]:
    """The generated aio stubs are untyped; every unary call is awaitable."""
    result: Awaitable[object] = value
    return result


def _state(i: int) -> wm.MemoryState:
    return wm.MemoryState(
        summary=SUMMARY,
        recent=[wm.Exchange(ask=f"question {i - n}?", answer=f"answer {i - n}.") for n in range(3)],
    )


def empty(w: Worker) -> Operation:
    stub = health_pb2_grpc.HealthStub(w.channel)
    request = health_pb2.HealthCheckRequest()
    return Operation(lambda _i: _awaitable(stub.Check(request)))


def empty_stream(w: Worker) -> Operation:
    """``Health.Watch``: the server streams the current status at once; the
    client takes that one message and cancels (the stream never ends by itself)."""
    stub = health_pb2_grpc.HealthStub(w.channel)
    request = health_pb2.HealthCheckRequest()

    async def call(_i: int) -> object:
        stream = stub.Watch(request)
        async for reply in stream:
            stream.cancel()
            return reply
        return None

    return Operation(call)


def _state_name(user: str) -> str:
    return f"users/{user}/conversations/c/memoryState"


def get_state(w: Worker) -> Operation:
    stub = wm_grpc.WorkingMemoryServiceStub(w.channel)
    name = _state_name(w.user)
    request = wm.GetMemoryStateRequest(name=name)

    async def prepare() -> None:
        state = _state(0)
        state.name = name
        await stub.SaveMemoryState(wm.SaveMemoryStateRequest(memory_state=state))

    return Operation(lambda _i: _awaitable(stub.GetMemoryState(request)), prepare)


def save_state(w: Worker) -> Operation:
    stub = wm_grpc.WorkingMemoryServiceStub(w.channel)
    name = _state_name(w.user)

    def call(i: int) -> Awaitable[object]:
        state = _state(i)
        state.name = name
        return _awaitable(stub.SaveMemoryState(wm.SaveMemoryStateRequest(memory_state=state)))

    return Operation(call)


def remember(w: Worker) -> Operation:
    stub = wm_grpc.WorkingMemoryServiceStub(w.channel)
    name = _state_name(w.user)

    def call(i: int) -> Awaitable[object]:
        request = wm.RememberExchangeRequest(
            name=name,
            exchange=wm.Exchange(ask=f"question {i}?", answer=f"answer {i}."),
            request_id=w.request_id("remember", i),
        )
        return _awaitable(stub.RememberExchange(request))

    return Operation(call)


def append(w: Worker) -> Operation:
    stub = cv_grpc.ConversationServiceStub(w.channel)
    conversation = f"users/{w.user}/conversations/c"

    def call(i: int) -> Awaitable[object]:
        request = cv.AppendMessagesRequest(
            conversation=conversation,
            messages=[cv.HistoryMessage(message_json=message_json(w.index, i))],
            run_id="bench-run",
            turn=i,
            request_id=w.request_id("append", i),
        )
        return _awaitable(stub.AppendMessages(request))

    return Operation(call)


def list_messages(w: Worker) -> Operation:
    """A page of 50 messages from a random position of a 1,000-message history."""
    stub = cv_grpc.ConversationServiceStub(w.channel)
    parent = f"users/{w.reader}/conversations/{CONVERSATION}"

    def call(_i: int) -> Awaitable[object]:
        start = w.rng.randrange(0, MESSAGES - PAGE + 1)
        request = cv.ListMessagesRequest(parent=parent, page_size=PAGE, start_position=start)
        return _awaitable(stub.ListMessages(request))

    return Operation(call)


def stream_history(w: Worker) -> Operation:
    """The whole 1,000-message history, streamed (server's default batches)."""
    stub = cv_grpc.ConversationServiceStub(w.channel)
    request = cv.StreamMessagesRequest(parent=f"users/{w.reader}/conversations/{CONVERSATION}")

    async def call(_i: int) -> object:
        count = 0
        async for reply in stub.StreamMessages(request):
            count += len(reply.messages)
        if count != MESSAGES:
            raise RuntimeError(f"streamed {count} messages, expected {MESSAGES}")
        return count

    return Operation(call)


def create_memory(w: Worker) -> Operation:
    stub = mm_grpc.MemoryServiceStub(w.channel)
    parent = f"users/{w.user}"

    def call(i: int) -> Awaitable[object]:
        request = mm.CreateMemoryRequest(
            parent=parent,
            memory=mm.Memory(text=w.corpus.sentence()),
            request_id=w.request_id("create-memory", i),
        )
        return _awaitable(stub.CreateMemory(request))

    return Operation(call)


def get_memory(w: Worker) -> Operation:
    stub = mm_grpc.MemoryServiceStub(w.channel)
    prefix = f"users/{w.reader}/memories/"

    def call(_i: int) -> Awaitable[object]:
        name = prefix + memory_id(w.rng.randrange(MEMORIES))
        return _awaitable(stub.GetMemory(mm.GetMemoryRequest(name=name)))

    return Operation(call)


def list_memories(w: Worker) -> Operation:
    stub = mm_grpc.MemoryServiceStub(w.channel)
    request = mm.ListMemoriesRequest(parent=f"users/{w.reader}", page_size=PAGE)
    return Operation(lambda _i: _awaitable(stub.ListMemories(request)))


def recall(w: Worker) -> Operation:
    """The default ``RecallMemories`` call (``semantic`` unset: fused, the
    server embeds the query) of a corpus sentence, over a data user's
    memories, up to 10 results streamed (as the peers' search)."""
    stub = mm_grpc.MemoryServiceStub(w.channel)
    parent = f"users/{w.reader}"

    async def call(_i: int) -> object:
        request = mm.RecallMemoriesRequest(parent=parent, query=w.corpus.sentence())
        return [reply async for reply in stub.RecallMemories(request)]

    return Operation(call)


def _recall_cell(w: Worker, **fields: Any) -> Operation:
    """``RecallMemories`` of a sentence query over ``RECALL_USER``, up to 10
    results streamed."""
    stub = mm_grpc.MemoryServiceStub(w.channel)
    parent = f"users/{RECALL_USER}"

    async def call(_i: int) -> object:
        query = sentence_query(w.corpus, w.rng)
        request = mm.RecallMemoriesRequest(parent=parent, query=query, **fields)
        return [reply async for reply in stub.RecallMemories(request)]

    return Operation(call)


def recall_lexical(w: Worker) -> Operation:
    return _recall_cell(w, semantic=False)


def recall_fused(w: Worker) -> Operation:
    # The stored vectors are random (bench.dataset): min_score 0 has every
    # call return its hits, as a call with relevant entries does.
    return _recall_cell(w, min_score=0.0)


def build_context(w: Worker) -> Operation:
    stub = mm_grpc.MemoryServiceStub(w.channel)
    parent = f"users/{RECALL_USER}"

    def call(_i: int) -> Awaitable[object]:
        query = sentence_query(w.corpus, w.rng)
        request = mm.BuildContextRequest(parent=parent, query=query, min_score=0.0)
        return _awaitable(stub.BuildContext(request))

    return Operation(call)


OPERATIONS: dict[str, Callable[[Worker], Operation]] = {
    "empty": empty,
    "empty-stream": empty_stream,
    "get-state": get_state,
    "save-state": save_state,
    "remember": remember,
    "append": append,
    "list-messages": list_messages,
    "stream-history": stream_history,
    "create-memory": create_memory,
    "get-memory": get_memory,
    "list-memories": list_memories,
    "recall": recall,
    "recall-lexical": recall_lexical,
    "recall-fused": recall_fused,
    "build-context": build_context,
}

_WORDS = f"{SENTENCE_WORDS[0]}-{SENTENCE_WORDS[1]}-word sentence"
_VECTORS = (
    "random values named as the default model's, so `min_score: 0`: every call returns its "
    "hits, as with relevant entries"
)

# What each operation is, for the report.
DESCRIPTIONS: dict[str, str] = {
    "empty": "health `Check` (empty unary RPC, the baseline)",
    "empty-stream": "health `Watch`: first streamed message, then cancel (empty server stream)",
    "get-state": "`GetMemoryState` of a full state (summary + 3 exchanges)",
    "save-state": "`SaveMemoryState` of a full state, no etag",
    "remember": "`RememberExchange` of one exchange, with `request_id`",
    "append": "`AppendMessages` of one message, with `request_id`, `run_id`, `turn`",
    "list-messages": f"`ListMessages`: a page of {PAGE} from a random position of {MESSAGES}",
    "stream-history": f"`StreamMessages` of a {MESSAGES:,}-message history",
    "create-memory": "`CreateMemory` with a generated text and `request_id`",
    "get-memory": f"`GetMemory` of a random one of the user's {MEMORIES:,}",
    "list-memories": f"`ListMemories`: first page of {PAGE} of {MEMORIES:,}",
    "recall": f"`RecallMemories`, the default call (fused: the server embeds the query), a "
    f"corpus sentence (6-12 words), up to 10 results, over a data user's {MEMORIES:,} memories "
    "(embedded by the server's model after their import; the peers' search does the same)",
    "recall-lexical": f"`RecallMemories` lexical (`semantic: false`) of a {_WORDS} query, up to 10 "
    f"results, over {RECALL_MEMORIES:,} memories",
    "recall-fused": f"`RecallMemories` fused, the default call (`semantic` unset: the server "
    f"embeds the query with its model, `local`), of a {_WORDS} query, up to 10 results, over "
    f"{RECALL_MEMORIES:,} memories with vectors ({_VECTORS})",
    "build-context": f"`BuildContext` (default budget; fused, the server embeds the query) of a "
    f"{_WORDS} query over {RECALL_MEMORIES:,} memories with vectors ({_VECTORS})",
}

WRITES = ("append", "remember", "save-state", "create-memory")
READS = ("get-state", "list-messages", "get-memory")
