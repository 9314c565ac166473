"""Run groups of make targets side by side, for `make test`.

    python tools/run_suites.py "test-python" "test-openai-agents test-langgraph" ...

Each argument is one group: its targets run one after another in a sub-make
(``make --keep-going --no-print-directory TARGET...``: a failed target does not
skip the later ones of its group), and the groups run at the same time.
Every line a group prints is passed through as it comes, prefixed with the
group's first target, so a CI log stays readable; at the end a table gives each
group's status and wall time. The exit status is 0 only when every group
passed. A group that fails does not stop the others (their results still tell
what else is broken).

Why: the suites are independent (each starts its own servers, clusters and
venvs on free ports), and each leaves one of the two cores idle much of the
time (waiting on a server, a cluster, a download or a compiler), so running two
groups at once shortens `make test` without changing any test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Group:
    """One sub-make and what it did."""

    targets: list[str]
    status: int | None = None
    seconds: float = 0.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.targets[0]


_print_lock = threading.Lock()


def _relay(group: Group, width: int, started: float) -> None:
    """Pass the group's output through, then record its status and wall time."""
    assert group.process is not None and group.process.stdout is not None
    prefix = f"[{group.label:<{width}}] ".encode()
    for line in group.process.stdout:
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
    print(f"\n{'group':<{width}}  status  wall s  targets")
    for group in groups:
        verdict = "ok" if group.status == 0 else f"exit {group.status}"
        print(
            f"{group.label:<{width}}  {verdict:<6}  {group.seconds:6.0f}  {' '.join(group.targets)}"
        )
    return 0 if all(group.status == 0 for group in groups) else 1


def main(argv: list[str]) -> int:
    groups = [Group(arg.split()) for arg in argv if arg.strip()]
    if not groups:
        print(__doc__, file=sys.stderr)
        return 2
    return run(groups, os.environ.get("MAKE", "make"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
