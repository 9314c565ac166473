"""Every conformance scenario (tests/conformance/scenarios) is well-formed, so a
broken one fails here, fast and without a server, rather than in four
runners: one form per step, methods that exist in the generated descriptors,
requests that parse, expected fields that exist in the response type,
status codes and ErrorInfo reasons that exist, placeholders and streams
defined before use. The format is tests/conformance/README.md. Also the
Python runner's matcher, on its own (the run against a server is
tests/client/test_conformance_runner.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from tests.conformance import run

SCENARIO_FILES = sorted(run.SCENARIOS.rglob("*.json"))
AREAS = ("working-memory", "history", "memories", "governance", "watch")
STATUS_CODES = {code.name for code in grpc.StatusCode}
REASONS = run.error_reasons()
POOL = run.load_generated()
MATCHERS = {"$any", "$len", "$gt", "$gte", "$lt", "$lte", "$ne", "$contains", "$some"}
STEP_KEYS = {
    "call": {"method", "request", "requests", "client", "expect", "save"},
    "open": {"open", "method", "request", "client"},
    "receive": {"receive", "expect", "save"},
    "close": {"close"},
}
# Messages printed as JSON scalars or free-form objects: not walked into.
OPAQUE = {
    "google.protobuf.Timestamp",
    "google.protobuf.Duration",
    "google.protobuf.FieldMask",
    "google.protobuf.Struct",
    "google.protobuf.Value",
}

Json = Any


def _id(path: Path) -> str:
    return run.scenario_id(path)


def test_there_are_enough_scenarios_in_every_area() -> None:
    per_area = Counter(_id(path).split("/")[0] for path in SCENARIO_FILES)
    assert len(SCENARIO_FILES) >= 45, per_area
    for area in AREAS:
        assert per_area[area] >= 5, per_area


def test_the_client_guide_counts_the_scenarios_of_every_area() -> None:
    guide = run.REPO_ROOT / "docs" / "clients" / "conformance.md"
    listed = {}
    for line in guide.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 2 and cells[1].isdigit():
            listed[cells[0].strip("`")] = int(cells[1])
    assert listed == dict(Counter(_id(path).split("/")[0] for path in SCENARIO_FILES))


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=_id)
def test_scenario_is_well_formed(path: Path) -> None:
    problems = check_scenario(json.loads(path.read_text(encoding="utf-8")))
    assert not problems, "\n".join(problems)


def check_scenario(data: Json) -> list[str]:
    """Every problem of one scenario, as ``step N: what`` lines."""
    if not isinstance(data, dict) or set(data) - {"description", "steps"}:
        return ["a scenario is an object with only description and steps"]
    problems = []
    if not isinstance(data.get("description"), str) or not data["description"].strip():
        problems.append("description: required")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        return [*problems, "steps: a non-empty array"]
    defined = {"user", "other_user"}
    streams: dict[str, Descriptor] = {}
    for number, step in enumerate(steps, start=1):
        problems.extend(f"step {number}: {why}" for why in check_step(step, defined, streams))
    return problems


def check_step(step: Json, defined: set[str], streams: dict[str, Descriptor]) -> list[str]:
    """The problems of one step; adds what it saves to ``defined`` and the
    stream it opens to ``streams`` (closing removes it)."""
    if not isinstance(step, dict):
        return ["a step is an object"]
    try:
        form = run.step_form(step)
    except run.StepFailed as error:
        return [str(error)]
    problems = [f"unexpected key {key!r} in a {form} step" for key in set(step) - STEP_KEYS[form]]
    if step.get("client", "a") not in ("a", "b"):
        problems.append('client is "a" or "b"')
    problems.extend(undefined_placeholders(step, defined))
    if form == "receive" or form == "close":
        name = step[form]
        if name not in streams:
            problems.append(f"{form} of stream {name!r}, which is not open")
        if form == "close":
            streams.pop(name, None)
        elif "response" not in step.get("expect", {}) or set(step["expect"]) != {"response"}:
            problems.append("receive needs expect.response (and nothing else)")
        else:
            problems.extend(check_expect(step["expect"], streams.get(name), streamed=False))
        defined.update(step.get("save", {}))
        return problems
    try:
        method = run.find_method(POOL, str(step["method"]))
    except KeyError as error:
        return [*problems, f"unknown method: {error}"]
    if form == "open":
        if not method.server_streaming or method.client_streaming:
            problems.append(f"open needs a server-streaming method, not {method.full_name}")
        if step["open"] in streams:
            problems.append(f"stream {step['open']!r} is already open")
        streams[step["open"]] = method.output_type
    if "request" in step and "requests" in step:
        problems.append("request or requests, not both")
    if form == "open" and "request" not in step:
        problems.append("open needs a request")
    if "requests" in step and not method.client_streaming:
        problems.append(f"requests (an array) is for client-streaming methods, not {method.name}")
    raw = step.get("requests", [step.get("request", {})])
    problems.extend(check_requests(raw, method.input_type))
    if form == "call":
        problems.extend(
            check_expect(step.get("expect", {}), method.output_type, method.server_streaming)
        )
        if "save" in step and not isinstance(step["save"], dict):
            problems.append("save maps variable names to paths")
        defined.update(step.get("save", {}))
    return problems


def undefined_placeholders(step: Json, defined: set[str]) -> list[str]:
    used: set[str] = set()

    def scan(value: Json) -> None:
        if isinstance(value, str):
            used.update(run._PLACEHOLDER.findall(value))
        elif isinstance(value, list):
            for item in value:
                scan(item)
        elif isinstance(value, dict):
            for item in value.values():
                scan(item)

    for key in ("request", "requests", "expect"):
        scan(step.get(key))
    return [
        f"placeholder ${{{name}}} is used before it is defined" for name in sorted(used - defined)
    ]


def check_requests(raw: Json, descriptor: Descriptor) -> list[str]:
    """Each request parses as the method's input type (placeholders as ``"1"``)."""
    if not isinstance(raw, list):
        return ["requests is an array"]
    problems = []
    cls = run.message_class(descriptor)
    for item in raw:
        filled = run.substitute(item, _Ones())
        try:
            json_format.ParseDict(filled, cls())
        except json_format.ParseError as error:
            if not _has_whole_placeholder(item):
                problems.append(f"request is not a {descriptor.full_name}: {error}")
    return problems


class _Ones(dict[str, Json]):
    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Json:
        return "1"


def _has_whole_placeholder(value: Json) -> bool:
    if isinstance(value, str):
        return run._WHOLE_PLACEHOLDER.match(value) is not None
    if isinstance(value, list):
        return any(_has_whole_placeholder(item) for item in value)
    if isinstance(value, dict):
        return any(_has_whole_placeholder(item) for item in value.values())
    return False


def check_expect(expect: Json, output: Descriptor | None, streamed: bool) -> list[str]:
    if not isinstance(expect, dict) or len(expect) > 1 or set(expect) - {"response", "error"}:
        return ["expect is {} or {response: ...} or {error: ...}"]
    if "error" in expect:
        return check_error(expect["error"])
    if "response" not in expect:
        return []
    expected = expect["response"]
    if output is None:
        return check_matchers(expected)
    if streamed:
        if isinstance(expected, list):
            return [p for item in expected for p in check_fields(item, output)]
        return check_fields(expected, output, top_array=True)
    return check_fields(expected, output)


def check_error(error: Json) -> list[str]:
    if not isinstance(error, dict) or set(error) - {"code", "reason", "fieldViolations"}:
        return ["error has code, reason and optionally fieldViolations"]
    problems = []
    if error.get("code") not in STATUS_CODES:
        problems.append(f"error code {error.get('code')!r} is not a gRPC status code name")
    # The README allows a bare code; the scenarios of this repository name the reason too.
    if error.get("reason") not in REASONS:
        problems.append(f"error reason {error.get('reason')!r} is not a mnemo.v1.ErrorReason")
    violations = error.get("fieldViolations", [])
    if not isinstance(violations, list) or not all(isinstance(v, str) for v in violations):
        problems.append("fieldViolations is an array of field paths")
    return problems


def _matcher(value: Json) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        key = str(next(iter(value)))
        if key.startswith("$"):
            return key
    return None


def check_matchers(value: Json) -> list[str]:
    """Only known matchers, with arguments of the right kind (no message type at hand)."""
    name = _matcher(value)
    if name is not None:
        if name not in MATCHERS:
            return [f"unknown matcher {name}"]
        return check_matchers(value[name]) if name in ("$some", "$ne") else []
    if isinstance(value, dict):
        return [p for item in value.values() for p in check_matchers(item)]
    if isinstance(value, list):
        return [p for item in value for p in check_matchers(item)]
    return []


def check_fields(expected: Json, descriptor: Descriptor, top_array: bool = False) -> list[str]:
    """Known matchers, and every expected key a JSON field name of ``descriptor``
    (recursively), so a misspelt key cannot pass as "absent"."""
    name = _matcher(expected)
    if name is not None:
        if name not in MATCHERS:
            return [f"unknown matcher {name}"]
        if name == "$some":
            return check_fields(expected[name], descriptor)
        return []
    if top_array:
        return ["a server stream's response is an array (or a matcher)"]
    if not isinstance(expected, dict):
        return [f"expected an object for {descriptor.full_name}, not {json.dumps(expected)}"]
    fields = {field.json_name: field for field in descriptor.fields}
    problems = []
    for key, value in expected.items():
        field = fields.get(key)
        if field is None:
            problems.append(f"{descriptor.full_name} has no field {key!r}")
        elif value is not None:
            problems.extend(_check_value(value, field))
    return problems


def _check_value(value: Json, field: FieldDescriptor) -> list[str]:
    message = field.message_type
    if message is None or message.full_name in OPAQUE or message.GetOptions().map_entry:
        return check_matchers(value)
    name = _matcher(value)
    if field.is_repeated and name is None:
        if not isinstance(value, list):
            return [f"{field.name} is repeated: expected an array or a matcher"]
        return [p for item in value for p in check_fields(item, message)]
    if field.is_repeated and name == "$some":
        return check_fields(value[name], message)
    return check_fields(value, message)


# ------------------------------------------------------------------ checker


def test_the_checker_finds_broken_scenarios() -> None:
    """Each kind of mistake is reported (the checker is no rubber stamp)."""
    good = {
        "method": "mnemo.v1.WorkingMemoryService/GetMemoryState",
        "request": {"name": "users/${user}/memoryState"},
        "expect": {"response": {"memoryState": {"etag": None}}},
    }
    assert check_scenario({"description": "d", "steps": [good]}) == []
    broken: list[tuple[Json, str]] = [
        ({**good, "method": "mnemo.v1.WorkingMemoryService/Nope"}, "unknown method"),
        ({**good, "request": {"nam": "x"}}, "is not a mnemo.v1.GetMemoryStateRequest"),
        ({**good, "expect": {"response": {"memoryStat": None}}}, "has no field 'memoryStat'"),
        ({**good, "expect": {"error": {"code": "ABORTED", "reason": "ETAG_MISMATCHED"}}}, "reason"),
        ({**good, "expect": {"error": {"code": "CONFLICT", "reason": "ETAG_MISMATCH"}}}, "code"),
        ({**good, "request": {"name": "users/${nobody}/memoryState"}}, "${nobody}"),
        ({**good, "expect": {"response": {"memoryState": {"$size": 1}}}}, "unknown matcher"),
        ({**good, "open": "s"}, "server-streaming"),
        ({"receive": "never-opened", "expect": {"response": {}}}, "not open"),
        ({**good, "close": "s"}, "one form"),
    ]
    for step, why in broken:
        problems = check_scenario({"description": "d", "steps": [step]})
        assert any(why in problem for problem in problems), (step, problems)


# ------------------------------------------------------------------ matcher


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ({"a": 1}, {"a": 1, "b": 2}),
        ({"n": 3}, {"n": "3"}),
        ({"n": "3"}, {"n": 3}),
        ({"gone": None}, {}),
        ({"xs": [{"k": "v"}]}, {"xs": [{"k": "v", "other": 1}]}),
        ({"xs": {"$len": 0}}, {}),
        ({"xs": {"$len": 2}}, {"xs": [1, 2]}),
        ({"s": {"$any": True}}, {"s": "x"}),
        ({"c": {"$gt": 4}}, {"c": "5"}),
        ({"c": {"$lte": 5}}, {"c": 5}),
        ({"e": {"$ne": "old"}}, {"e": "new"}),
        ({"e": {"$ne": "old"}}, {}),
        ({"t": {"$contains": "ell"}}, {"t": "hello"}),
        ({"xs": {"$some": {"k": 2}}}, {"xs": [{"k": 1}, {"k": 2}]}),
        ([{"a": 1}], [{"a": 1}]),
    ],
)
def test_matches(expected: Json, actual: Json) -> None:
    assert run.mismatch(expected, actual) is None


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ({"a": 1}, {"a": 2}),
        ({"a": 1}, {}),
        ({"gone": None}, {"gone": "here"}),
        ({"xs": [{"k": "v"}]}, {"xs": [{"k": "v"}, {"k": "w"}]}),
        ({"xs": {"$len": 1}}, {}),
        ({"s": {"$any": True}}, {}),
        ({"c": {"$gt": 5}}, {"c": "5"}),
        ({"c": {"$gt": 5}}, {}),
        ({"e": {"$ne": "old"}}, {"e": "old"}),
        ({"t": {"$contains": "x"}}, {"t": "hello"}),
        ({"xs": {"$some": {"k": 3}}}, {"xs": [{"k": 1}, {"k": 2}]}),
        ({"b": True}, {"b": 1}),
        ({"n": 1}, {"n": "one"}),
        ({"n": 0}, {"n": ""}),
        ([{"a": 1}], []),
    ],
)
def test_mismatches(expected: Json, actual: Json) -> None:
    assert run.mismatch(expected, actual)


def test_placeholders() -> None:
    variables = {"user": "u1", "cursor": 7}
    assert run.substitute({"name": "users/${user}/x", "after": "${cursor}"}, variables) == {
        "name": "users/u1/x",
        "after": 7,
    }
    assert run.substitute(["c${cursor}"], variables) == ["c7"]
    with pytest.raises(run.StepFailed, match="unknown placeholder"):
        run.substitute("${missing}", variables)
    assert run.lookup({"memories": [{"name": "n0"}]}, "memories.0.name") == "n0"
    with pytest.raises(run.StepFailed, match="no 'memories.1.name'"):
        run.lookup({"memories": [{"name": "n0"}]}, "memories.1.name")
