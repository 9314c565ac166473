"""Run groups of make targets side by side, for `make test`.

    python tools/run_suites.py "test-python" "test-openai-agents test-langgraph" ...

Each argument is one group: its targets run one after another in a sub-make
(``make --keep-going --no-print-directory TARGET...``: a failed target does not
skip the later ones of its group), and the groups run at the same time.
Every line a group prints is passed through as it comes, prefixed with the
group's first target, so a CI log stays readable; at the end a table gives each
group's status and wall time, preceded, for each group that failed, by a recap:
the lines that name a failure (make's ``***`` lines, pytest's ``FAILED`` /
``ERROR`` lines, tracebacks' last lines) and the group's last lines. A CI log
that keeps only its tail therefore still says what broke. The exit status is 0
only when every group passed. A group that fails does not stop the others (their results still tell
what else is broken).

Why: the suites are independent (each starts its own servers, clusters and
venvs on free ports), and each leaves one of the two cores idle much of the
time (waiting on a server, a cluster, a download or a compiler), so running two
groups at once shortens `make test` without changing any test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

#: Lines worth repeating in a failed group's recap.
FAILURE_LINE = re.compile(
    rb"(\*\*\*|^FAILED |^ERROR |^E  |Error:|error:|Exception:|\bexit status\b|Timeout|timed out)"
)
RECAP_MATCHES = 40
RECAP_TAIL = 30


@dataclass
class Group:
    """One sub-make and what it did."""

    targets: list[str]
    status: int | None = None
    seconds: float = 0.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    failures: deque[bytes] = field(default_factory=lambda: deque(maxlen=RECAP_MATCHES))
    tail: deque[bytes] = field(default_factory=lambda: deque(maxlen=RECAP_TAIL))

    @property
    def label(self) -> str:
        return self.targets[0]


_print_lock = threading.Lock()


def _relay(group: Group, width: int, started: float) -> None:
    """Pass the group's output through, then record its status and wall time."""
    assert group.process is not None and group.process.stdout is not None
    prefix = f"[{group.label:<{width}}] ".encode()
    for line in group.process.stdout:
        group.tail.append(line)
        if FAILURE_LINE.search(line):
            group.failures.append(line)
        with _print_lock:
            sys.stdout.buffer.write(prefix + line)
            sys.stdout.buffer.flush()
    group.status = group.process.wait()
    group.seconds = time.monotonic() - started


def run(groups: list[Group], make: str) -> int:
    """Start every group, relay their output, wait for all; 0 if all passed."""
    width = max(len(group.label) for group in groups)
    relays = []
    started = time.monotonic()
    for group in groups:
        group.process = subprocess.Popen(
            [make, "--keep-going", "--no-print-directory", *group.targets],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MAKEFLAGS": ""},
        )
        relay = threading.Thread(target=_relay, args=(group, width, started), daemon=True)
        relay.start()
        relays.append(relay)
    for relay in relays:
        relay.join()
    for group in groups:
        if group.status != 0:
            _recap(group)
    print(f"\n{'group':<{width}}  status  wall s  targets")
    for group in groups:
        verdict = "ok" if group.status == 0 else f"exit {group.status}"
        print(
            f"{group.label:<{width}}  {verdict:<6}  {group.seconds:6.0f}  {' '.join(group.targets)}"
        )
    return 0 if all(group.status == 0 for group in groups) else 1


def _recap(group: Group) -> None:
    """Repeat what a failed group said about its failure, then its last lines."""
    out = sys.stdout.buffer
    out.write(f"\n=== {group.label}: exit {group.status}; lines naming a failure ===\n".encode())
    out.writelines(group.failures)
    out.write(f"=== {group.label}: its last {len(group.tail)} lines ===\n".encode())
    out.writelines(group.tail)
    out.flush()


def main(argv: list[str]) -> int:
    groups = [Group(arg.split()) for arg in argv if arg.strip()]
    if not groups:
        print(__doc__, file=sys.stderr)
        return 2
    return run(groups, os.environ.get("MAKE", "make"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
