"""The pieces of change watching that need no server: wake-up flags, the
NOTIFY payload, and what the client's follower does after each error."""

from __future__ import annotations

from typing import cast

import grpc
import pytest
from sqlalchemy.engine import make_url

from mnemo.client._follow import backoff, next_step
from mnemo.client.errors import MnemoError, error_class
from mnemo_server.domain.change_watch import ChangeFeed, ChangeWatchSettings, Wakeups
from mnemo_server.domain.errors import Unavailable
from mnemo_server.domain.ports import ChangeStore
from mnemo_server.store.feed.notify import libpq_conninfo, parse_payload


async def test_a_wake_sets_the_flags_of_that_users_watches_only() -> None:
    wakeups = Wakeups()
    with wakeups.subscribe("u1") as first, wakeups.subscribe("u1") as second:
        with wakeups.subscribe("u2") as other:
            assert wakeups.watched_users == {"u1", "u2"}
            assert wakeups.watch_count == 3
            wakeups.wake("u1")
            assert (first.is_set(), second.is_set(), other.is_set()) == (True, True, False)
        assert wakeups.watched_users == {"u1"}
    assert wakeups.watch_count == 0
    wakeups.wake("u1")  # nobody watches: nothing happens


async def test_close_wakes_every_watch_and_every_later_one() -> None:
    wakeups = Wakeups()
    with wakeups.subscribe("u1") as flag:
        wakeups.close()
        assert flag.is_set() and wakeups.closed
    with wakeups.subscribe("u2") as later:
        assert later.is_set()


async def test_a_watch_begun_during_shutdown_is_unavailable_before_any_read() -> None:
    """Not a clean end with nothing sent, which a follower cannot tell from a
    quiet feed: it is told to watch again, and the store is never read."""
    wakeups = Wakeups()
    feed = ChangeFeed(cast(ChangeStore, object()), wakeups, ChangeWatchSettings())
    wakeups.close()
    with pytest.raises(Unavailable) as raised:
        await anext(feed.watch(None, "u1", 0, None))
    assert raised.value.reason == "UNAVAILABLE"
    assert feed.watch_count == 0


@pytest.mark.parametrize(
    ("payload", "parsed"),
    [
        ("u1 42", ("u1", 42)),
        ("tenant:user.x 7", ("tenant:user.x", 7)),
        ("u1", None),
        ("u1 -3", None),
        (" 5", None),
    ],
)
def test_notify_payloads(payload: str, parsed: tuple[str, int] | None) -> None:
    assert parse_payload(payload) == parsed


def test_the_listen_connection_uses_the_servers_url_for_libpq() -> None:
    url = make_url("postgresql+psycopg://mnemo:s%40cret@db:5433/mnemo?sslmode=require")
    assert libpq_conninfo(url) == "postgresql://mnemo:s%40cret@db:5433/mnemo?sslmode=require"


def _error(code: grpc.StatusCode, reason: str = "") -> MnemoError:
    return error_class(code, reason)("x", code=code, reason=reason)


@pytest.mark.parametrize(
    ("code", "reason", "step"),
    [
        (grpc.StatusCode.ABORTED, "WATCH_LAGGING", "resume"),
        (grpc.StatusCode.UNAVAILABLE, "", "backoff"),
        (grpc.StatusCode.CANCELLED, "", "backoff"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "", "backoff"),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", "backoff"),
        (grpc.StatusCode.INTERNAL, "", "backoff"),  # a proxy's
        (grpc.StatusCode.INTERNAL, "INTERNAL", "backoff"),
        (grpc.StatusCode.UNKNOWN, "", "backoff"),
        (grpc.StatusCode.ABORTED, "CONCURRENT_MODIFICATION", "backoff"),
        (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED", "resync"),
        (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_AHEAD", "resync"),
    ],
)
def test_what_a_follower_does_after_an_error(code: grpc.StatusCode, reason: str, step: str) -> None:
    assert next_step(_error(code, reason)) == step


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (grpc.StatusCode.ABORTED, "ETAG_MISMATCH"),
        (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME"),
        (grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"),
        (grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
        (grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
    ],
)
def test_a_follower_raises_every_other_error(code: grpc.StatusCode, reason: str) -> None:
    error = _error(code, reason)
    with pytest.raises(MnemoError) as raised:
        next_step(error)
    assert raised.value is error


def test_backoff_doubles_up_to_its_ceiling() -> None:
    assert 0.05 <= backoff(1, 5.0) <= 0.1
    assert 0.1 <= backoff(2, 5.0) <= 0.2
    assert 2.5 <= backoff(30, 5.0) <= 5.0
