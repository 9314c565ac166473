"""The one clock: the current time in microseconds since the epoch, the
form every stored time takes."""

from __future__ import annotations

import time

__all__ = ["now_micros"]


def now_micros() -> int:
    """The current time in microseconds since the epoch (the stored form)."""
    return time.time_ns() // 1000
