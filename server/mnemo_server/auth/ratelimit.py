"""Per-user request rate limits: token buckets, in process, in bounded memory.

Each key (the caller's user id; under ``--auth none`` the client's address)
has a bucket of ``burst`` tokens refilled at ``per_second``; a call takes one
token or is refused with ``ResourceExhausted`` (reason ``RATE_LIMITED``) whose
``retry_after_seconds`` is when the next token arrives (sent as a
``google.rpc.RetryInfo``). Taking a token never awaits, so there is no lock
and one user's refusals never delay another user's calls. At most
``max_keys`` buckets are kept, least recently used first out; a bucket that
is dropped comes back full, which only errs on the generous side.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from mnemo_server.domain.errors import ResourceExhausted

DEFAULT_MAX_KEYS = 100_000


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets per key. ``burst`` 0 means one second's worth (the rate, rounded up)."""

    def __init__(
        self,
        per_second: float,
        burst: int = 0,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_second <= 0 or not math.isfinite(per_second):
            raise ValueError("per_second must be a positive number")
        self.per_second = per_second
        self.burst = burst or max(1, math.ceil(per_second))
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def acquire(self, key: str) -> None:
        """Take one token of ``key``'s bucket. Raises ``ResourceExhausted``."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(tokens=float(self.burst), updated=now)
            self._buckets[key] = bucket
            if len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.per_second)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return
        wait = (1.0 - bucket.tokens) / self.per_second
        raise ResourceExhausted(
            f"too many requests: at most {self.per_second:g} per second "
            f"(bursts of {self.burst}); retry in {wait:.3f}s",
            metadata={
                "limit_per_second": f"{self.per_second:g}",
                "burst": str(self.burst),
                "retry_after_seconds": f"{wait:.3f}",
            },
            retry_after_seconds=wait,
            reason="RATE_LIMITED",
        )
