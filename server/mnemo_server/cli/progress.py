"""A dependency-free progress line for long command-line transfers.

``Progress`` counts records and bytes. On a terminal it redraws one line in
place (carriage return, at most ``every`` seconds); elsewhere (a pipe, a log
file, a test) it draws nothing, so that no control character ends up in a
log. ``finish`` always writes one summary line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(count: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; below 1 KiB the exact count (``"12 B"``)."""
    size = float(count)
    for unit in _UNITS:
        if size < 1024 or unit == _UNITS[-1]:
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


class Progress:
    """Records and bytes of a transfer, shown on ``stream`` (see the module doc)."""

    def __init__(
        self,
        stream: TextIO,
        verb: str,
        *,
        total_bytes: int | None = None,
        every: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.records = 0
        self.bytes = 0
        self._stream = stream
        self._verb = verb
        self._total = total_bytes
        self._every = every
        self._clock = clock
        self._live = stream.isatty()
        self._drawn_at: float | None = None
        self._width = 0

    def add(self, records: int, size: int) -> None:
        """Count ``records`` more records of ``size`` bytes; redraw if due."""
        self.records += records
        self.bytes += size
        if not self._live:
            return
        now = self._clock()
        if self._drawn_at is None or now - self._drawn_at >= self._every:
            self._draw(self._line())
            self._drawn_at = now

    def show(self, line: str) -> None:
        """Draw ``line`` in place of the counts (on a terminal): for a step
        whose progress cannot be counted, such as one call that erases."""
        if self._live:
            self._draw(line)

    def _line(self) -> str:
        line = f"{self._verb} {self.records} records, {human_bytes(self.bytes)}"
        if self._total:
            line += f" of {human_bytes(self._total)} ({min(100, 100 * self.bytes // self._total)}%)"
        return line

    def _draw(self, line: str) -> None:
        padding = " " * max(0, self._width - len(line))
        self._stream.write(f"\r{line}{padding}")
        self._stream.flush()
        self._width = len(line)

    def clear(self) -> None:
        """Clear the progress line (on a terminal), writing nothing else."""
        if self._live and self._width:
            self._draw("")
            self._stream.write("\r")
            self._stream.flush()
            self._width = 0

    def finish(self, summary: str) -> None:
        """Clear the progress line (on a terminal) and write ``summary`` on a line."""
        self.clear()
        self._stream.write(summary + "\n")
        self._stream.flush()
