"""The Python conformance runner: every scenario of ``tests/conformance/scenarios``
against one live server, dispatched by method name through the generated
``mnemo.v1`` code (the descriptor pool and ``json_format``; no per-method code).

    MNEMO_TARGET=127.0.0.1:50051 .venv/bin/python -m tests.conformance.run
    .venv/bin/python -m tests.conformance.run --target 127.0.0.1:50051 [FOLDER_OR_FILE...]

Prints ``ok <id>`` or ``FAIL <id>: step N: <why>`` per scenario, then
``conformance python: P passed, F failed``; exits 1 when anything failed (2 for
a usage error). The format is ``tests/conformance/README.md``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import queue
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor, MethodDescriptor
from google.protobuf.message import Message

import mnemo.v1
from mnemo.client.errors import from_rpc_error

LANGUAGE = "python"
REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = REPO_ROOT / "tests" / "conformance" / "scenarios"
CALL_TIMEOUT_S = 10.0
RECEIVE_TIMEOUT_S = 10.0
# An open stream (a watch) is bounded too, so a scenario can never hang.
OPEN_STREAM_TIMEOUT_S = 60.0
STEP_FORMS = ("method", "open", "receive", "close")
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WHOLE_PLACEHOLDER = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_NUMERIC = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")

Json = Any


class StepFailed(Exception):
    """One step did not do what its scenario says; the message says why."""


# ------------------------------------------------------------- generated code


def load_generated() -> descriptor_pool.DescriptorPool:
    """Import every ``mnemo.v1`` module, so their files are in the default pool."""
    for module in pkgutil.iter_modules(mnemo.v1.__path__):
        if module.name.endswith("_pb2"):
            importlib.import_module(f"mnemo.v1.{module.name}")
    return descriptor_pool.Default()


def find_method(pool: descriptor_pool.DescriptorPool, full_name: str) -> MethodDescriptor:
    """``mnemo.v1.Service/Method`` -> its descriptor. Raises ``KeyError``."""
    service_name, _, method_name = full_name.partition("/")
    if not method_name:
        raise KeyError(f"{full_name!r} is not of the form package.Service/Method")
    service = pool.FindServiceByName(service_name)
    method = service.methods_by_name.get(method_name)
    if method is None:
        raise KeyError(f"{service_name} has no method {method_name}")
    return method


def message_class(descriptor: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(descriptor)


def error_reasons() -> set[str]:
    """Every ``mnemo.v1.ErrorReason`` as sent on the wire (without its prefix)."""
    enum = load_generated().FindEnumTypeByName("mnemo.v1.ErrorReason")
    return {value.name.removeprefix("ERROR_REASON_") for value in enum.values}


# ------------------------------------------------------------- placeholders


def substitute(value: Json, variables: Mapping[str, Json]) -> Json:
    """``value`` with every ``${name}`` in its strings replaced (object keys are
    left as they are). Raises ``StepFailed`` for an unknown name."""
    if isinstance(value, str):
        whole = _WHOLE_PLACEHOLDER.match(value)
        if whole:
            return _variable(whole.group(1), variables)
        return _PLACEHOLDER.sub(lambda m: _text(_variable(m.group(1), variables)), value)
    if isinstance(value, list):
        return [substitute(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, variables) for key, item in value.items()}
    return value


def _variable(name: str, variables: Mapping[str, Json]) -> Json:
    if name not in variables:
        raise StepFailed(f"unknown placeholder ${{{name}}}")
    return variables[name]


def _text(value: Json) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def lookup(value: Json, path: str) -> Json:
    """The value at a dot-separated ``path`` (field names, 0-based indices).
    Raises ``StepFailed`` when it is absent."""
    current = value
    for part in path.split("."):
        if isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise StepFailed(f"save: no {path!r} in the response {_short(value)}")
    return current


# ----------------------------------------------------------------- matching

_ABSENT = object()
_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def mismatch(expected: Json, actual: Json, path: str = "") -> str | None:
    """Why ``actual`` (``_ABSENT`` for a missing key) does not match
    ``expected``, or ``None`` when it does (README "Matching expect")."""
    where = path or "response"
    if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith("$"):
        return _matcher(next(iter(expected)), next(iter(expected.values())), actual, where)
    if expected is None:
        return None if actual is _ABSENT else f"{where}: expected absent, got {_short(actual)}"
    if actual is _ABSENT:
        return f"{where}: missing (expected {_short(expected)})"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected an object, got {_short(actual)}"
        for key, item in expected.items():
            why = mismatch(item, actual.get(key, _ABSENT), f"{path}.{key}" if path else key)
            if why:
                return why
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where}: expected an array, got {_short(actual)}"
        if len(actual) != len(expected):
            return (
                f"{where}: expected {len(expected)} elements, got {len(actual)}: {_short(actual)}"
            )
        for index, (item, got) in enumerate(zip(expected, actual, strict=True)):
            why = mismatch(item, got, f"{path}.{index}" if path else str(index))
            if why:
                return why
        return None
    return (
        None
        if scalar_equal(expected, actual)
        else f"{where}: expected {_short(expected)}, got {_short(actual)}"
    )


def scalar_equal(expected: Json, actual: Json) -> bool:
    """Equal scalars; a string and a number are equal when their decimal text is."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers):
        return bool(expected == actual)
    if isinstance(expected, numbers) and isinstance(actual, str):
        return _as_number(actual) == expected
    if isinstance(expected, str) and isinstance(actual, numbers):
        return _as_number(expected) == actual
    return bool(expected == actual)


def _as_number(text: str) -> float | None:
    return float(text) if _NUMERIC.match(text) else None


def _matcher(name: str, argument: Json, actual: Json, where: str) -> str | None:
    if name == "$any":
        return None if actual is not _ABSENT else f"{where}: missing (expected a value)"
    if name == "$len":
        items = [] if actual is _ABSENT else actual
        if not isinstance(items, list):
            return f"{where}: expected an array, got {_short(actual)}"
        return (
            None
            if len(items) == argument
            else f"{where}: expected {argument} elements, got {len(items)}"
        )
    if name in _COMPARISONS:
        number = (
            actual if isinstance(actual, (int, float)) and not isinstance(actual, bool) else None
        )
        if isinstance(actual, str):
            number = _as_number(actual)
        if number is None:
            return f"{where}: expected a number {name} {argument}, got {_short(actual)}"
        return (
            None
            if _COMPARISONS[name](number, float(argument))
            else f"{where}: {_short(actual)} is not {name} {argument}"
        )
    if name == "$ne":
        if actual is not _ABSENT and mismatch(argument, actual, where) is None:
            return f"{where}: expected anything but {_short(argument)}"
        return None
    if name == "$contains":
        if isinstance(actual, str) and str(argument) in actual:
            return None
        return f"{where}: expected a string containing {argument!r}, got {_short(actual)}"
    if name == "$some":
        if not isinstance(actual, list):
            return f"{where}: expected an array, got {_short(actual)}"
        if any(mismatch(argument, item, where) is None for item in actual):
            return None
        return f"{where}: no element matches {_short(argument)} in {_short(actual)}"
    return f"{where}: unknown matcher {name}"


def _short(value: Json, limit: int = 300) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -------------------------------------------------------------------- calls


@dataclass
class CallError:
    """A failed call: the status code's name, the ErrorInfo reason and the
    BadRequest fields from the ``grpc-status-details-bin`` trailer."""

    code: str
    message: str
    reason: str = ""
    fields: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, error: grpc.RpcError) -> CallError:
        """Read by the Python client's own error mapping (``from_rpc_error``)."""
        mapped = from_rpc_error(error)
        return cls(
            mapped.code.name,
            mapped.message,
            mapped.reason,
            [violation.field for violation in mapped.field_violations],
        )

    def describe(self) -> str:
        fields = f" fields {self.fields}" if self.fields else ""
        return f"{self.code} {self.reason or '(no reason)'}{fields}: {self.message[:200]}"


def error_mismatch(expected: Mapping[str, Json], got: CallError) -> str | None:
    """Why ``got`` is not the expected error (code, reason, field violations)."""
    if got.code != expected.get("code"):
        return f"expected {expected.get('code')}, got {got.describe()}"
    if "reason" in expected and got.reason != expected["reason"]:
        return f"expected reason {expected['reason']}, got {got.describe()}"
    missing = [f for f in expected.get("fieldViolations", []) if f not in got.fields]
    if missing:
        return f"expected field violations {missing}, got {got.describe()}"
    return None


def to_json(message: Message) -> Json:
    """Canonical proto3 JSON without default values."""
    return json_format.MessageToDict(message)


class Stream:
    """An open server stream whose messages a thread puts on a queue."""

    _END = object()

    def __init__(self, call: Any) -> None:
        self._call = call
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for message in self._call:
                self._queue.put(message)
            self._queue.put(self._END)
        except grpc.RpcError as error:
            self._queue.put(CallError.of(error))

    def receive(self, expected: Json, timeout: float) -> Json:
        """The first message matching ``expected`` (others are discarded)."""
        deadline = time.monotonic() + timeout
        last = "nothing"
        while True:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=max(remaining, 0))
            except queue.Empty:
                raise StepFailed(
                    f"no matching message within {timeout:g}s (last: {last})"
                ) from None
            if item is self._END:
                raise StepFailed(f"the stream ended before a matching message (last: {last})")
            if isinstance(item, CallError):
                raise StepFailed(f"the stream failed before a matching message: {item.describe()}")
            got = to_json(item)
            why = mismatch(expected, got)
            if why is None:
                return got
            last = why

    def close(self) -> None:
        self._call.cancel()
        self._thread.join(5)


class Client:
    """One channel (its own connection) that calls any method by its descriptor."""

    def __init__(self, target: str) -> None:
        # A local subchannel pool: client "b" must not share "a"'s connection.
        self.channel = grpc.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1)]
        )

    def _callable(self, method: MethodDescriptor) -> Any:
        path = f"/{method.containing_service.full_name}/{method.name}"
        request = message_class(method.input_type)
        response = message_class(method.output_type)
        kind = (method.client_streaming, method.server_streaming)
        factory = {
            (False, False): self.channel.unary_unary,
            (False, True): self.channel.unary_stream,
            (True, False): self.channel.stream_unary,
            (True, True): self.channel.stream_stream,
        }[kind]
        return factory(
            path,
            request_serializer=request.SerializeToString,
            response_deserializer=response.FromString,
        )

    def call(self, method: MethodDescriptor, requests: Sequence[Message]) -> Json:
        """One call read to its end: a message, or the array of a server stream's."""
        stub = self._callable(method)
        if method.client_streaming:
            source: Iterator[Message] | Message = iter(requests)
        else:
            source = requests[0]
        if method.server_streaming:
            return [to_json(m) for m in stub(source, timeout=CALL_TIMEOUT_S)]
        return to_json(stub(source, timeout=CALL_TIMEOUT_S))

    def open(self, method: MethodDescriptor, request: Message) -> Stream:
        if not method.server_streaming or method.client_streaming:
            raise StepFailed(f"open needs a server-streaming method, not {method.full_name}")
        return Stream(self._callable(method)(request, timeout=OPEN_STREAM_TIMEOUT_S))

    def close(self) -> None:
        self.channel.close()


# ---------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    id: str
    data: Mapping[str, Json]


def load_scenarios(paths: Iterable[Path]) -> list[Scenario]:
    """Every ``*.json`` under the given folders (or the files), in sorted path
    order; ids are paths below the scenarios folder without ``.json``."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.json")) if path.is_dir() else [path])
    scenarios = []
    for file in sorted(files, key=lambda f: scenario_id(f)):
        scenarios.append(Scenario(scenario_id(file), json.loads(file.read_text(encoding="utf-8"))))
    return scenarios


def scenario_id(file: Path) -> str:
    resolved = file.resolve()
    try:
        relative = resolved.relative_to(SCENARIOS)
    except ValueError:
        relative = Path(resolved.name)
    return relative.with_suffix("").as_posix()


def step_form(step: Mapping[str, Json]) -> str:
    """``call``, ``open``, ``receive`` or ``close``. Raises ``StepFailed``."""
    forms = [name for name in ("open", "receive", "close") if name in step]
    if "method" in step and forms and forms != ["open"]:
        forms.insert(0, "method")
    if len(forms) > 1:
        raise StepFailed(f"a step has one form, this one has {forms}")
    if forms:
        return forms[0]
    if "method" not in step:
        raise StepFailed("a step needs method, open, receive or close")
    return "call"


class ScenarioRun:
    """The state of one scenario: its variables, clients and open streams."""

    def __init__(
        self, target: str, users: Mapping[str, str], pool: descriptor_pool.DescriptorPool
    ) -> None:
        self.target = target
        self.pool = pool
        self.variables: dict[str, Json] = dict(users)
        self.clients: dict[str, Client] = {}
        self.streams: dict[str, Stream] = {}

    def client(self, name: str) -> Client:
        if name not in ("a", "b"):
            raise StepFailed(f'client must be "a" or "b", not {name!r}')
        if name not in self.clients:
            self.clients[name] = Client(self.target)
        return self.clients[name]

    def requests(self, method: MethodDescriptor, step: Mapping[str, Json]) -> list[Message]:
        raw = step["requests"] if "requests" in step else [step.get("request", {})]
        cls = message_class(method.input_type)
        messages = []
        for item in substitute(raw, self.variables):
            try:
                messages.append(json_format.ParseDict(item, cls()))
            except json_format.ParseError as error:
                raise StepFailed(
                    f"request is not a {method.input_type.full_name}: {error}"
                ) from None
        return messages

    def method(self, step: Mapping[str, Json]) -> MethodDescriptor:
        try:
            return find_method(self.pool, str(step["method"]))
        except KeyError as error:
            raise StepFailed(f"unknown method: {error}") from None

    def run_step(self, step: Mapping[str, Json]) -> None:
        form = step_form(step)
        if form == "call":
            method = self.method(step)
            expect = substitute(step.get("expect", {}), self.variables)
            try:
                got = self.client(step.get("client", "a")).call(method, self.requests(method, step))
            except grpc.RpcError as error:
                failure = CallError.of(error)
                if "error" not in expect:
                    raise StepFailed(f"{step['method']} failed: {failure.describe()}") from None
                why = error_mismatch(expect["error"], failure)
                if why:
                    raise StepFailed(why) from None
                return
            if "error" in expect:
                raise StepFailed(
                    f"expected {expect['error'].get('code')}, but the call succeeded: {_short(got)}"
                )
            if "response" in expect:
                why = mismatch(expect["response"], got)
                if why:
                    raise StepFailed(why)
            self.save(step, got)
        elif form == "open":
            method = self.method(step)
            name = str(step["open"])
            if name in self.streams:
                raise StepFailed(f"stream {name!r} is already open")
            self.streams[name] = self.client(step.get("client", "a")).open(
                method, self.requests(method, step)[0]
            )
        elif form == "receive":
            stream = self._stream(str(step["receive"]))
            expect = substitute(step.get("expect", {}), self.variables)
            got = stream.receive(expect.get("response", {}), RECEIVE_TIMEOUT_S)
            self.save(step, got)
        else:
            self._stream(str(step["close"])).close()
            del self.streams[str(step["close"])]

    def _stream(self, name: str) -> Stream:
        if name not in self.streams:
            raise StepFailed(f"no open stream {name!r}")
        return self.streams[name]

    def save(self, step: Mapping[str, Json], got: Json) -> None:
        for variable, path in step.get("save", {}).items():
            self.variables[variable] = lookup(got, path)

    def close(self) -> None:
        for stream in self.streams.values():
            stream.close()
        for client in self.clients.values():
            client.close()


def users_for(run_id: str, index: int) -> dict[str, str]:
    user = f"conf-{LANGUAGE}-{run_id}-{index}"
    return {"user": user, "other_user": f"{user}-b"}


def run_scenario(
    scenario: Scenario,
    target: str,
    users: Mapping[str, str],
    pool: descriptor_pool.DescriptorPool | None = None,
) -> str | None:
    """Run one scenario; ``None`` when it passed, else ``step N: why`` (1-based)."""
    run = ScenarioRun(target, users, pool or load_generated())
    number = 0
    try:
        for index, step in enumerate(scenario.data.get("steps", []), start=1):
            number = index
            run.run_step(step)
    except StepFailed as error:
        return f"step {number}: {error}"
    except Exception as error:  # a runner fault fails the scenario, not the run
        return f"step {number}: {type(error).__name__}: {error}"
    finally:
        run.close()
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, help=f"scenario folders or files (default {SCENARIOS})"
    )
    parser.add_argument(
        "--target",
        default=os.environ.get("MNEMO_TARGET", ""),
        help="host:port (default $MNEMO_TARGET)",
    )
    args = parser.parse_args(argv)
    if not args.target:
        parser.error("no server: pass --target or set MNEMO_TARGET")
    pool = load_generated()
    scenarios = load_scenarios(args.paths or [SCENARIOS])
    run_id = secrets.token_hex(4)
    failed = 0
    for index, scenario in enumerate(scenarios):
        why = run_scenario(scenario, args.target, users_for(run_id, index), pool)
        if why is None:
            print(f"ok {scenario.id}", flush=True)
        else:
            failed += 1
            print(f"FAIL {scenario.id}: {why}", flush=True)
    print(f"conformance {LANGUAGE}: {len(scenarios) - failed} passed, {failed} failed", flush=True)
    return 1 if failed or not scenarios else 0


if __name__ == "__main__":
    sys.exit(main())
