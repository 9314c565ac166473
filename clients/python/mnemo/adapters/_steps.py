"""Adapter logic written once, run by the blocking and the asyncio client alike.

An adapter method is a generator of *steps*: it yields what to call on the
client (``lambda client: client.get_memory_state(...)``) or a ``Sleep``, and
receives the result (or has the exception thrown into it). ``run_steps``
executes the steps with a ``MnemoClient``, ``arun_steps`` with an
``AsyncMnemoClient`` (awaiting coroutines, collecting async iterators), so the
sync and asyncio adapters share every rule: retries, degradation, conflicts.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from mnemo.client.errors import DeadlineExceededError, UnavailableError

T = TypeVar("T")
P = ParamSpec("P")
#: The client an adapter holds: ``MnemoClient`` (blocking) or ``AsyncMnemoClient``.
ClientT = TypeVar("ClientT")

#: One call on the client; its result may be a value, an iterator, an awaitable
#: or an async iterator (lists and streams are collected into a list).
Call = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float


Step = Call | Sleep
Steps = Generator[Step, Any, T]

#: Failures after which a write carrying a request id is simply sent again:
#: the server applies it at most once.
RETRYABLE = (UnavailableError, DeadlineExceededError)


def run_steps(client: Any, steps: Steps[T]) -> T:
    """Run ``steps`` against a blocking client; returns the generator's value."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = None, None
        try:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
            else:
                value = step(client)
                if isinstance(value, Iterator):
                    value = list(value)
        except Exception as raised:
            error = raised


async def arun_steps(client: Any, steps: Steps[T]) -> T:
    """Run ``steps`` against an asyncio client; returns the generator's value."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        value, error = None, None
        try:
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            else:
                value = step(client)
                if inspect.isawaitable(value):
                    value = await value
                elif isinstance(value, AsyncIterator):
                    value = [item async for item in value]
        except Exception as raised:
            error = raised


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often an adapter sends a write again after ``UNAVAILABLE`` or
    ``DEADLINE_EXCEEDED`` (on top of the channel's own retries of ``UNAVAILABLE``).

    Only writes that carry a request id (or are idempotent) are retried, with
    the same request id, so a write that did land before its answer was lost
    is not applied twice.
    """

    attempts: int = 3
    backoff: float = 0.2

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")


#: The retry policy of the adapters unless told otherwise.
DEFAULT_RETRY = RetryPolicy()


def retrying(call: Call, policy: RetryPolicy) -> Steps[Any]:
    """Steps that make ``call``, again after a retryable failure, up to ``policy.attempts``."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return (yield call)
        except RETRYABLE:
            if attempt == policy.attempts:
                raise
        yield Sleep(policy.backoff * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


def blocking(steps: Callable[Concatenate[Any, P], Steps[T]]) -> Callable[Concatenate[Any, P], T]:
    """A blocking adapter method: runs ``steps`` (a method of the adapter's
    ``steps`` object, whose signature and docstring it takes) with ``self._client``."""

    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run_steps(self._client, steps(self.steps, *args, **kwargs))

    return functools.wraps(steps)(method)


def awaitable(
    steps: Callable[Concatenate[Any, P], Steps[T]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]:
    """The asyncio twin of ``blocking``: a coroutine method running ``steps``."""

    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await arun_steps(self._client, steps(self.steps, *args, **kwargs))

    return functools.wraps(steps)(method)
