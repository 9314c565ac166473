"""The progress line of ``mnemo export`` / ``mnemo import``: redrawn in place
on a terminal (at most every ``every`` seconds), nothing but the summary
elsewhere."""

from __future__ import annotations

import io

from mnemo_server.cli.progress import Progress, human_bytes


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_bytes_are_shown_in_binary_units() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1536, 5 * 1024**3)] == [
        "0 B",
        "1023 B",
        "1.5 KiB",
        "5.0 GiB",
    ]


def test_on_a_terminal_the_line_is_redrawn_in_place_and_cleared() -> None:
    out, clock = Terminal(), Clock()
    progress = Progress(out, "importing", total_bytes=4096, every=1.0, clock=clock)
    progress.add(1, 1024)
    progress.add(1, 1024)  # within the second: not drawn
    clock.now = 1.0
    progress.add(1, 1024)
    progress.finish("done")
    assert out.getvalue() == (
        "\rimporting 1 records, 1.0 KiB of 4.0 KiB (25%)"
        "\rimporting 3 records, 3.0 KiB of 4.0 KiB (75%)"
        "\r" + " " * len("importing 3 records, 3.0 KiB of 4.0 KiB (75%)") + "\r"
        "done\n"
    )
    assert (progress.records, progress.bytes) == (3, 3072)


def test_elsewhere_only_the_summary_is_written() -> None:
    out = io.StringIO()
    progress = Progress(out, "exporting")
    for _ in range(1000):
        progress.add(1, 10)
    progress.finish("mnemo: exported 1000 records")
    assert out.getvalue() == "mnemo: exported 1000 records\n"


def test_a_step_without_counts_shows_its_line_and_clear_writes_no_summary() -> None:
    out = Terminal()
    progress = Progress(out, "erasing")
    progress.show("erasing users/u1 ...")
    progress.clear()
    assert out.getvalue() == "\rerasing users/u1 ..." + "\r" + " " * 20 + "\r"
    piped = io.StringIO()
    quiet = Progress(piped, "erasing")
    quiet.show("erasing users/u1 ...")
    quiet.clear()
    assert piped.getvalue() == ""
