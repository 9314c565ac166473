"""The Python conformance runner (tests/conformance/run.py) against the client
suite's live server: real scenarios pass, and a scenario with a wrong
expectation FAILS, naming the step and why, so a runner that passes
everything cannot hide behind the suite. (The format check of every scenario
is tests/unit/test_conformance_format.py; `make test-conformance` runs the
whole folder in every language.)"""

from __future__ import annotations

import copy
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import run

SCENARIOS = {s.id: s for s in run.load_scenarios([run.SCENARIOS])}


def _run(data: dict[str, Any], target: str) -> str | None:
    users = run.users_for(secrets.token_hex(4), 0)
    return run.run_scenario(run.Scenario("test", data), target, users)


def _scenario(scenario_id: str) -> dict[str, Any]:
    return copy.deepcopy(dict(SCENARIOS[scenario_id].data))


@pytest.mark.parametrize(
    "scenario_id", ["working-memory/etag-conflict", "watch/sees-other-client", "history/compaction"]
)
def test_a_real_scenario_passes(scenario_id: str, mnemo_target: str) -> None:
    assert _run(_scenario(scenario_id), mnemo_target) is None


def _mutated(scenario_id: str, step: int, expect: dict[str, Any]) -> dict[str, Any]:
    data = _scenario(scenario_id)
    data["steps"][step - 1]["expect"] = expect
    return data


# Each: a scenario, the 1-based step whose expectation is replaced, the wrong
# expectation, and what the failure must say.
WRONG = [
    (
        "working-memory/etag-conflict",
        4,
        {"response": {"memoryState": {"summary": "likes water"}}},
        'memoryState.summary: expected "likes water", got "likes coffee"',
    ),
    (
        "working-memory/etag-conflict",
        3,
        {"error": {"code": "ABORTED", "reason": "POSITION_MISMATCH"}},
        "expected reason POSITION_MISMATCH, got ABORTED ETAG_MISMATCH",
    ),
    (
        "working-memory/etag-conflict",
        3,
        {"error": {"code": "FAILED_PRECONDITION", "reason": "ETAG_MISMATCH"}},
        "expected FAILED_PRECONDITION, got ABORTED",
    ),
    (
        "working-memory/etag-conflict",
        2,
        {"error": {"code": "ABORTED", "reason": "ETAG_MISMATCH"}},
        "expected ABORTED, but the call succeeded",
    ),
    (
        "working-memory/bad-input",
        1,
        {
            "error": {
                "code": "INVALID_ARGUMENT",
                "reason": "INVALID_FIELD",
                "fieldViolations": ["exchange.answer"],
            }
        },
        "expected field violations ['exchange.answer']",
    ),
    (
        "working-memory/evictions",
        3,
        {"response": {"evicted": {"$len": 2}}},
        "evicted: expected 2 elements, got 1",
    ),
    (
        "working-memory/never-written-reads-empty",
        1,
        {"response": {"memoryState": {"etag": {"$any": True}}}},
        "memoryState.etag: missing",
    ),
    (
        "history/stream-messages",
        2,
        {"response": [{"messages": {"$len": 3}}]},
        "response: expected 1 elements, got 2",
    ),
    (
        "history/stream-messages",
        3,
        {"response": [{"messages": [{"text": "m1"}, {"text": "m2", "position": None}]}]},
        "0.messages.1.position: expected absent",
    ),
]


@pytest.mark.parametrize(("scenario_id", "step", "expect", "why"), WRONG)
def test_a_wrong_expectation_fails(
    scenario_id: str, step: int, expect: dict[str, Any], why: str, mnemo_target: str
) -> None:
    failure = _run(_mutated(scenario_id, step, expect), mnemo_target)
    assert failure is not None, "the runner passed a wrong expectation"
    assert failure.startswith(f"step {step}: "), failure
    assert why in failure, failure


def test_placeholders_and_saves_that_do_not_resolve_fail(mnemo_target: str) -> None:
    data = _scenario("working-memory/etag-conflict")
    data["steps"][1]["request"]["memoryState"]["etag"] = "${etag_never_saved}"
    assert _run(data, mnemo_target) == "step 2: unknown placeholder ${etag_never_saved}"
    data = _scenario("working-memory/etag-conflict")
    data["steps"][0]["save"] = {"etag": "memoryState.nope"}
    failure = _run(data, mnemo_target)
    assert failure is not None and failure.startswith("step 1: save: no 'memoryState.nope'")


def test_main_prints_a_line_per_scenario_and_a_summary(
    mnemo_target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _scenario("working-memory/remember-and-read")
    bad = _mutated(
        "working-memory/remember-and-read", 2, {"response": {"memoryState": {"etag": ""}}}
    )
    (tmp_path / "a-good.json").write_text(json.dumps(good))
    (tmp_path / "b-bad.json").write_text(json.dumps(bad))
    assert run.main(["--target", mnemo_target, str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ok a-good"
    assert lines[1].startswith("FAIL b-bad: step 2: memoryState.etag: expected")
    assert lines[2:] == ["conformance python: 1 passed, 1 failed"]
