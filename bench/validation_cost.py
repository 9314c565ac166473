"""What request validation costs per call, beside the empty RPC: ``make bench-validation``.

Issue 13 asks whether Mnemo's static request rules should be ``buf.validate``
annotations checked by protovalidate (as authzed/api and openfga/api do),
adopted only if checking them costs at most a few percent of the empty RPC.
This measures, in one run:

- **hand-written**: the CPU per call of Mnemo's own edge validation of a
  realistic ``CreateMemoryRequest`` (text, key, four metadata entries) and
  ``AppendMessagesRequest`` (ten SDK-native messages), as the servicers run
  it (the rules tables of ``mnemo_server.api.<service>.rules`` and the
  checks beside them: names, the entry's limits, the messages' JSON);
- **protovalidate**: the CPU per call of ``protovalidate.Validator`` (2.1.0,
  its Rust engine) over the same requests, their messages annotated with the
  rules Mnemo applies that ``buf.validate`` can express (names as patterns,
  sizes, counts, ranges, finite and non-zero vectors, the scope/conversation
  pairing as CEL). The annotated descriptors are built here, at run time,
  from Mnemo's own descriptors: nothing in the repository depends on
  protovalidate. What it cannot express (a message's JSON, metadata as
  compact JSON, the ownership of names) would still be hand-written, so its
  cost adds to, not replaces, part of the hand-written one;
- **empty RPC**: the server CPU per call of Mnemo's empty unary RPC (health
  ``Check``) on a ``mnemo serve`` process over a fresh SQLite file, at c1,
  and the client's wall time per call (the baseline of ``docs/benchmarks.md``).

protovalidate is installed by the make target into ``.venv-validation`` (a
``pip --target`` directory put on ``sys.path``), never into the server's
environment. Results go to stdout as a markdown table (and ``--json F``).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    field_mask_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
)
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.servers import cpu_seconds, migrate, serve
from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import memories_pb2 as mm
from mnemo_server.api import convert, names
from mnemo_server.api.conversations import rules as conversation_rules
from mnemo_server.api.memories import requests as memory_requests
from mnemo_server.api.memories import rules as memory_rules
from mnemo_server.api.validation import Validator, check_fields, messages_of, user_of
from mnemo_server.config import Settings

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / ".venv-validation"
_WELL_KNOWN = (duration_pb2, field_mask_pb2, struct_pb2, timestamp_pb2)  # in the pool first

ID = r"[A-Za-z0-9][A-Za-z0-9._~:-]{0,127}"
USER = rf"^users/{ID}$"
CONVERSATION = rf"^users/{ID}/conversations/{ID}$"
OPTIONAL_CONVERSATION = rf"^(users/{ID}/conversations/{ID})?$"
NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"


# ------------------------------------------------------------------ requests


def create_memory_request() -> mm.CreateMemoryRequest:
    return mm.CreateMemoryRequest(
        parent="users/bench-user",
        memory=mm.Memory(
            text="The user prefers window seats on long flights and vegetarian meals. " * 3,
            key="travel.preferences",
            scope=mm.MEMORY_SCOPE_IDENTITY,
            metadata={"topic": "travel", "confidence": "0.9", "lang": "en", "by": "agent"},
        ),
        request_id="4f6c1b9e-0d2a-4c1e-9d4b-3b1f2e7a8c90",
    )


def append_messages_request() -> cv.AppendMessagesRequest:
    messages = []
    for turn in range(10):
        role = "user" if turn % 2 == 0 else "assistant"
        content = [{"type": "text", "text": f"Turn {turn}: what about the hotel near the station?"}]
        messages.append(
            cv.HistoryMessage(message_json=json.dumps({"role": role, "content": content}))
        )
    return cv.AppendMessagesRequest(
        conversation="users/bench-user/conversations/trip-planning",
        messages=messages,
        run_id="run-2026-12-01-0001",
        turn=3,
        request_id="9a1e2b3c-4d5e-4f60-8a7b-6c5d4e3f2a10",
        expected_position=40,
    )


# ------------------------------------------------------------- hand-written


SETTINGS = Settings()


def hand_create_memory(request: mm.CreateMemoryRequest) -> object:
    """``MemoryServicer.CreateMemory``'s validation (no call scope)."""
    v = Validator()
    user_id = user_of(v, request.parent, "parent", None)
    draft = memory_requests.draft_of(v, request.memory, "memory", user_id, None)
    origin = memory_requests.origin_of(
        v, request.origin_conversation, "origin_conversation", user_id, None
    )
    check_fields(v, request, memory_rules.RULES)
    v.raise_if_invalid()
    return draft, origin


def hand_append_messages(request: cv.AppendMessagesRequest) -> object:
    """``ConversationServicer.AppendMessages``'s validation (no call scope)."""
    v = Validator()
    key = v.attempt(
        lambda: names.parse_conversation(request.conversation, "conversation", None), None
    )
    messages = messages_of(v, request.messages, "messages", SETTINGS, min_count=1)
    check_fields(v, request, conversation_rules.RULES)
    metadata = convert.metadata_from_struct(request.metadata)
    v.metadata(metadata, "metadata")
    v.raise_if_invalid()
    return key, messages, metadata


# ------------------------------------------------------------ protovalidate


def _validate_file_bytes() -> bytes:
    """The serialized ``buf/validate/validate.proto`` protovalidate ships."""
    from protovalidate._gen.buf.validate import validate_pb  # type: ignore[import-not-found]

    source = inspect.getsource(validate_pb)
    literal = source[source.index("_DESC = file_desc(") :].split("\n", 2)[1].strip().rstrip(",")
    value = ast.literal_eval(literal)
    assert isinstance(value, bytes)
    return value


class Annotated:
    """Copies of Mnemo's request messages (package ``mnemobench.v1``) whose
    fields carry ``buf.validate`` rules, in the default descriptor pool."""

    def __init__(self) -> None:
        pool = descriptor_pool.Default()
        pool.AddSerializedFile(_validate_file_bytes())
        self._field_rules = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("buf.validate.FieldRules")
        )
        self._message_rules = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("buf.validate.MessageRules")
        )
        conversations = self._copy(cv.DESCRIPTOR)
        memories = self._copy(mm.DESCRIPTOR)
        self._annotate_conversations(conversations)
        self._annotate_memories(memories)
        for file in (conversations, memories):
            pool.AddSerializedFile(file.SerializeToString())
        self._pool = pool

    def cls(self, name: str) -> type[Message]:
        found: type[Message] = message_factory.GetMessageClass(
            self._pool.FindMessageTypeByName(f"mnemobench.v1.{name}")
        )
        return found

    @staticmethod
    def _copy(file: Any) -> descriptor_pb2.FileDescriptorProto:
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        messages = list(proto.message_type)
        while messages:
            message = messages.pop()
            messages.extend(message.nested_type)
            for field in message.field:
                if field.HasField("type_name"):
                    field.type_name = field.type_name.replace(".mnemo.v1.", ".mnemobench.v1.")
        proto.name = proto.name.replace("mnemo/v1/", "mnemobench/v1/")
        proto.package = "mnemobench.v1"
        deps = [d.replace("mnemo/v1/", "mnemobench/v1/") for d in proto.dependency]
        del proto.dependency[:]
        proto.dependency.extend([*deps, "buf/validate/validate.proto"])
        del proto.service[:]
        return proto

    def _set(self, message: descriptor_pb2.DescriptorProto, field: str, **rules: Any) -> None:
        """Set ``(buf.validate.field)`` of ``field`` (rules as a dict of the
        FieldRules' JSON form), as raw option bytes (extension 1159)."""
        from google.protobuf import json_format

        value = self._field_rules()
        json_format.ParseDict(rules, value)
        target = next(f for f in message.field if f.name == field)
        target.options.MergeFromString(_extension(value.SerializeToString()))

    def _set_message(self, message: descriptor_pb2.DescriptorProto, **rules: Any) -> None:
        from google.protobuf import json_format

        value = self._message_rules()
        json_format.ParseDict(rules, value)
        message.options.MergeFromString(_extension(value.SerializeToString()))

    def _annotate_conversations(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        messages = {m.name: m for m in file.message_type}
        identifier = {"string": {"maxLen": "128", "notContains": "\x00"}}
        append = messages["AppendMessagesRequest"]
        self._set(append, "conversation", string={"pattern": CONVERSATION})
        self._set(
            append,
            "messages",
            repeated={"minItems": "1", "maxItems": str(SETTINGS.max_messages_per_append)},
        )
        self._set(append, "run_id", **identifier)
        self._set(append, "turn", int32={"gte": 0})
        self._set(append, "request_id", **identifier)
        self._set(append, "expected_position", int64={"gte": "0", "lte": str(2**31 - 1)})
        history = messages["HistoryMessage"]
        self._set(
            history,
            "message_json",
            string={"minLen": "1", "maxBytes": str(SETTINGS.max_message_bytes)},
        )

    def _annotate_memories(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        messages = {m.name: m for m in file.message_type}
        memory = messages["Memory"]
        self._set(
            memory,
            "text",
            required=True,
            string={"maxBytes": "4096", "pattern": r"\S", "notContains": "\x00"},
        )
        self._set(memory, "key", string={"maxBytes": "256", "pattern": NO_CONTROL})
        self._set(memory, "scope", enum={"definedOnly": True})
        self._set(memory, "source", enum={"definedOnly": True})
        self._set(memory, "conversation", string={"pattern": OPTIONAL_CONVERSATION})
        self._set(
            memory,
            "metadata",
            map={
                "maxPairs": "32",
                "keys": {"string": {"minLen": "1", "maxBytes": "4096", "pattern": NO_CONTROL}},
                "values": {"string": {"maxBytes": "4096", "notContains": "\x00"}},
            },
        )
        self._set_message(
            memory,
            cel=[
                {
                    "id": "memory.conversation_scope",
                    "message": "conversation is required with conversation scope",
                    "expression": "this.scope != 2 || this.conversation != ''",
                },
                {
                    "id": "memory.identity_scope",
                    "message": "conversation must be empty with identity scope",
                    "expression": "this.scope == 2 || this.conversation == ''",
                },
            ],
        )
        embedding = messages["Embedding"]
        self._set(embedding, "model", string={"minLen": "1", "maxBytes": "256"})
        self._set(
            embedding,
            "values",
            repeated={"minItems": "1", "maxItems": "4096", "items": {"float": {"finite": True}}},
        )
        create = messages["CreateMemoryRequest"]
        self._set(create, "parent", string={"pattern": USER})
        self._set(create, "memory", required=True)
        self._set(create, "memory_id", string={"pattern": rf"^({ID})?$"})
        self._set(create, "request_id", string={"maxLen": "128", "notContains": "\x00"})
        self._set(create, "origin_conversation", string={"pattern": OPTIONAL_CONVERSATION})


def _extension(payload: bytes) -> bytes:
    """Field 1159 (``buf.validate.field`` / ``.message``), length-delimited."""
    return _varint(1159 << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# ------------------------------------------------------------------ timing


def per_call_us(work: Callable[[], object], calls: int, repeat: int) -> tuple[float, float]:
    """Median (and min) process CPU µs per call of ``work`` over ``repeat`` windows."""
    for _ in range(min(calls, 500)):
        work()
    windows = []
    for _ in range(repeat):
        start = time.process_time_ns()
        for _ in range(calls):
            work()
        windows.append((time.process_time_ns() - start) / calls / 1000)
    return statistics.median(windows), min(windows)


def empty_rpc(calls: int, repeat: int) -> tuple[float, float]:
    """Server CPU µs and client wall µs per health ``Check`` on a ``mnemo serve``
    process (c1, one channel): the medians of ``repeat`` windows."""
    with tempfile.TemporaryDirectory(prefix="mnemo-validation-bench-") as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        migrate(url)
        with serve(url) as server, grpc.insecure_channel(server.target) as channel:
            check = health_pb2_grpc.HealthStub(channel).Check
            request = health_pb2.HealthCheckRequest()
            for _ in range(500):
                check(request)
            cpu, wall = [], []
            for _ in range(repeat):
                before, started = cpu_seconds(server.pid), time.perf_counter()
                for _ in range(calls):
                    check(request)
                wall.append((time.perf_counter() - started) / calls * 1e6)
                cpu.append((cpu_seconds(server.pid) - before) / calls * 1e6)
    return statistics.median(cpu), statistics.median(wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per window")
    parser.add_argument("--repeat", type=int, default=5, help="windows per figure (median)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--no-protovalidate", action="store_true", help="only the hand-written rules and the RPC"
    )
    args = parser.parse_args(argv)

    requests: dict[str, tuple[Message, Callable[[Any], object]]] = {
        "CreateMemory": (create_memory_request(), hand_create_memory),
        "AppendMessages (10 messages)": (append_messages_request(), hand_append_messages),
    }
    results: dict[str, dict[str, float]] = {}
    validator = None
    annotated = None
    if not args.no_protovalidate:
        sys.path.insert(0, str(PACKAGES))
        import protovalidate  # type: ignore[import-not-found]

        validator = protovalidate.Validator()
        annotated = Annotated()
    for label, (request, hand) in requests.items():
        figures: dict[str, float] = {}
        figures["hand_us"], _ = per_call_us(partial(hand, request), args.calls, args.repeat)
        if validator is not None and annotated is not None:
            twin = annotated.cls(type(request).DESCRIPTOR.name).FromString(
                request.SerializeToString()
            )
            assert validator.collect_violations(twin) == [], validator.collect_violations(twin)
            _check_catches(validator, twin)
            figures["protovalidate_us"], _ = per_call_us(
                partial(validator.collect_violations, twin), args.calls, args.repeat
            )
        results[label] = figures
    cpu, wall = empty_rpc(max(args.calls // 2, 1000), args.repeat)
    empty = {"server_cpu_us": cpu, "client_wall_us": wall}
    _print(results, empty)
    if args.json:
        args.json.write_text(json.dumps({"requests": results, "empty_rpc": empty}, indent=2))
    return 0


def _check_catches(validator: Any, valid: Message) -> None:
    """The annotations are live: a request broken on purpose has violations."""
    broken: Any = type(valid)()
    broken.CopyFrom(valid)
    if valid.DESCRIPTOR.name == "CreateMemoryRequest":
        broken.parent = "not a name"
    else:
        broken.turn = -1
    assert validator.collect_violations(broken), "the buf.validate annotations were not applied"


def _print(results: dict[str, dict[str, float]], empty: dict[str, float]) -> None:
    base = empty["server_cpu_us"]
    print(
        f"empty RPC (health Check, mnemo serve, c1): server CPU {base:.0f} µs/call, "
        f"client wall {empty['client_wall_us']:.0f} µs/call\n"
    )
    print("| request | hand-written µs CPU | ÷ empty RPC | protovalidate µs CPU | ÷ empty RPC |")
    print("| --- | --- | --- | --- | --- |")
    for label, figures in results.items():
        hand = figures["hand_us"]
        pv = figures.get("protovalidate_us")
        pv_cells = f"{pv:.1f} | {pv / base:.1%}" if pv is not None else "- | -"
        print(f"| {label} | {hand:.1f} | {hand / base:.1%} | {pv_cells} |")


if __name__ == "__main__":
    raise SystemExit(main())
