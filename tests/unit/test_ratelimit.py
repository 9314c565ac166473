"""Token buckets (``auth.ratelimit``) on a fake clock."""

from __future__ import annotations

import pytest

from mnemo_server.auth.ratelimit import RateLimiter
from mnemo_server.domain.errors import ResourceExhausted


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _refused(limiter: RateLimiter, key: str) -> ResourceExhausted:
    with pytest.raises(ResourceExhausted) as raised:
        limiter.acquire(key)
    return raised.value


def test_a_burst_then_one_per_interval() -> None:
    clock = Clock()
    limiter = RateLimiter(2.0, 3, clock=clock)
    for _ in range(3):
        limiter.acquire("alice")
    refused = _refused(limiter, "alice")
    assert refused.reason == "RATE_LIMITED"
    assert refused.retry_after_seconds == pytest.approx(0.5)
    clock.now += 0.25
    assert _refused(limiter, "alice").retry_after_seconds == pytest.approx(0.25)
    clock.now += 0.25
    limiter.acquire("alice")
    clock.now += 100
    for _ in range(3):  # refilled, but never above the burst
        limiter.acquire("alice")
    _refused(limiter, "alice")


def test_users_have_their_own_buckets() -> None:
    limiter = RateLimiter(1.0, 1, clock=Clock())
    limiter.acquire("alice")
    _refused(limiter, "alice")
    limiter.acquire("bob")


def test_the_default_burst_is_one_seconds_worth() -> None:
    assert RateLimiter(0.2).burst == 1
    assert RateLimiter(7.5).burst == 8
    assert RateLimiter(7.5, 20).burst == 20


def test_memory_is_bounded_least_recently_used_first_out() -> None:
    limiter = RateLimiter(1.0, 1, max_keys=3, clock=Clock())
    for key in ("a", "b", "c"):
        limiter.acquire(key)
    limiter.acquire("d")  # drops "a", the least recently used
    assert len(limiter) == 3
    limiter.acquire("a")  # back with a full bucket
    _refused(limiter, "d")


@pytest.mark.parametrize("rate", [0.0, -1.0, float("inf"), float("nan")])
def test_a_rate_must_be_positive_and_finite(rate: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(rate)
