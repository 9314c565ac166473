"""``python -m tools.image_check [--only STEP,...]`` (``make test-image``):
the steps of this package's docstring, in order, then a table of their wall
times; exit 1 when one fails. Whatever was started is removed at the end."""

from __future__ import annotations

import argparse
import fcntl
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.image_check.common import CheckFailed, Podman, say
from tools.image_check.compose import check_compose
from tools.image_check.container import check_container
from tools.image_check.images import build_image, build_standins, ensure_base
from tools.image_check.kube import check_kube

PROGRAMS = ("podman", "runc", "debootstrap", "podman-compose")
# podman's names are the machine's (the image's tag, the pods of the Deployment, its
# Secret): one run at a time, whichever checkout it comes from.
LOCK = Path(tempfile.gettempdir()) / "mnemo-test-image.lock"
LOCK_WAIT_S = 1800.0


@contextmanager
def _one_run_at_a_time() -> Iterator[None]:
    with LOCK.open("a") as lock:
        deadline = time.monotonic() + LOCK_WAIT_S
        waiting = False
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise CheckFailed(f"another run held {LOCK} for {LOCK_WAIT_S:g}s") from None
                if not waiting:
                    say(f"waiting for another make test-image to finish ({LOCK})")
                    waiting = True
                time.sleep(2)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _images(podman: Podman, scratch: Path) -> None:
    ensure_base(podman)
    build_image(podman)
    build_standins(podman)


STEPS: dict[str, Callable[[Podman, Path], None]] = {
    "images": _images,
    "container": check_container,
    "kube": check_kube,
    "compose": check_compose,
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.image_check", description=__doc__)
    parser.add_argument(
        "--only",
        default=",".join(STEPS),
        help=f"comma-separated steps, of {', '.join(STEPS)} (default: all; "
        "the others need the images built)",
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in STEPS]
    if unknown:
        parser.error(f"unknown steps {', '.join(unknown)}")
    missing = [program for program in PROGRAMS if shutil.which(program) is None]
    if missing:
        print(f"test-image: {', '.join(missing)} missing: `make test-image` installs them")
        return 2
    podman = Podman()
    times: list[tuple[str, float]] = []
    failed = ""
    name = "lock"
    with tempfile.TemporaryDirectory(prefix="mnemo-image-check-") as scratch:
        try:
            with _one_run_at_a_time():
                try:
                    for name in chosen:
                        started = time.monotonic()
                        say(f"--- {name}")
                        STEPS[name](podman, Path(scratch))
                        times.append((name, time.monotonic() - started))
                finally:
                    podman.clean_up()
        except CheckFailed as failure:
            failed = f"{name}: {failure}"
    for name, seconds in times:
        say(f"{name:<10} {seconds:6.0f} s")
    if failed:
        say(f"FAILED {failed}")
        return 1
    say("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
