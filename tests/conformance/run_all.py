"""Run every language's conformance runner against ONE live server, at once.

    .venv/bin/python -m tests.conformance.run_all [--only python,typescript] [--timeout 300]

Starts ``mnemo serve --auth none`` on 127.0.0.1 (a free port) over a
throwaway SQLite file, runs the runners concurrently with
``MNEMO_TARGET=127.0.0.1:PORT`` (each bounded by ``--timeout``), prints each
one's output under its language, then a table (language, passed, failed,
seconds). Exits 1 when a runner failed, timed out, is missing, or did not
print its summary line; always stops the server. What each runner prints is
tests/conformance/README.md ("Runners").
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.support.subprocess_server import subprocess_server

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Runner:
    language: str
    command: tuple[str, ...]
    cwd: Path
    # The file whose absence means "this runner is not built / not there".
    needs: Path


RUNNERS = (
    Runner(
        "python",
        (str(REPO_ROOT / ".venv/bin/python"), "-m", "tests.conformance.run"),
        REPO_ROOT,
        REPO_ROOT / "tests/conformance/run.py",
    ),
    Runner(
        "typescript",
        ("node", "clients/typescript/dist/test/conformance/run.js"),
        REPO_ROOT,
        REPO_ROOT / "clients/typescript/dist/test/conformance/run.js",
    ),
    Runner(
        "go",
        ("go", "run", "./cmd/conformance"),
        REPO_ROOT / "clients/go",
        REPO_ROOT / "clients/go/cmd/conformance",
    ),
    Runner(
        "kotlin",
        ("clients/kotlin/run-conformance",),
        REPO_ROOT,
        REPO_ROOT / "clients/kotlin/run-conformance",
    ),
)
_SUMMARY = re.compile(r"^conformance (\S+): (\d+) passed, (\d+) failed$", re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    language: str
    output: str
    seconds: float
    passed: int | None
    failed: int | None
    problem: str  # "" when the runner ran to its summary line and exited 0

    @property
    def ok(self) -> bool:
        return not self.problem


def run_one(runner: Runner, env: Mapping[str, str], timeout: float) -> Outcome:
    """Run one runner to its end (or its timeout) and read its summary line."""
    if not runner.needs.exists():
        return Outcome(runner.language, "", 0.0, None, None, f"missing: {runner.needs}")
    started = time.monotonic()
    try:
        done = subprocess.run(
            runner.command,
            cwd=runner.cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        output = _text(expired.stdout)
        seconds = time.monotonic() - started
        return Outcome(
            runner.language, output, seconds, None, None, f"timed out after {timeout:g}s"
        )
    except OSError as error:
        return Outcome(runner.language, "", 0.0, None, None, f"cannot start: {error}")
    seconds = time.monotonic() - started
    output = _text(done.stdout)
    summary = [m for m in _SUMMARY.finditer(output) if m.group(1) == runner.language]
    if not summary:
        return Outcome(
            runner.language,
            output,
            seconds,
            None,
            None,
            f"no summary line (exit {done.returncode})",
        )
    passed, failed = int(summary[-1].group(2)), int(summary[-1].group(3))
    problem = ""
    if done.returncode != 0 or failed:
        problem = f"{failed} failed (exit {done.returncode})"
    elif passed == 0:
        problem = "ran no scenario"
    return Outcome(runner.language, output, seconds, passed, failed, problem)


def _text(output: bytes | str | None) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else output.decode(errors="replace")


def report(outcomes: Sequence[Outcome]) -> str:
    """Each runner's output under its language, then the summary table."""
    lines = []
    for outcome in outcomes:
        lines.append(f"==> {outcome.language}")
        lines.append(outcome.output.rstrip() or "(no output)")
        lines.append("")
    lines.append(f"{'language':<12} {'passed':>6} {'failed':>6} {'seconds':>8}  result")
    for outcome in outcomes:
        passed = "-" if outcome.passed is None else str(outcome.passed)
        failed = "-" if outcome.failed is None else str(outcome.failed)
        result = "ok" if outcome.ok else f"FAIL: {outcome.problem}"
        lines.append(
            f"{outcome.language:<12} {passed:>6} {failed:>6} {outcome.seconds:>8.1f}  {result}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.run_all")
    names = [runner.language for runner in RUNNERS]
    parser.add_argument(
        "--only", default=",".join(names), help=f"comma-separated subset of {','.join(names)}"
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per runner, s")
    args = parser.parse_args(argv)
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(names))
    if unknown or not wanted:
        parser.error(f"--only takes {','.join(names)}; not {','.join(unknown) or 'nothing'}")
    runners = [runner for runner in RUNNERS if runner.language in wanted]
    with tempfile.TemporaryDirectory(prefix="mnemo-conformance-") as directory:
        url = f"sqlite:///{Path(directory) / 'mnemo.db'}"
        with subprocess_server(url, "--auth", "none", log_dir=Path(directory) / "logs") as server:
            env = {**os.environ, "MNEMO_TARGET": server.target}
            with ThreadPoolExecutor(max_workers=len(runners)) as pool:
                outcomes = list(pool.map(lambda r: run_one(r, env, args.timeout), runners))
    print(report(outcomes), flush=True)
    return 0 if all(outcome.ok for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
