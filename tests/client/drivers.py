"""Run one test body against both clients.

``open_client("sync", target)`` is a ``MnemoClient``. ``open_client("async",
target)`` is an ``AsyncDriver``: it owns an event loop and an
``AsyncMnemoClient`` created in it, awaits every coroutine method and collects
every async iterator into a list, so the same synchronous test code exercises
the asyncio client's real awaits and ``async for`` loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, cast

from mnemo.client import AsyncMnemoClient, MnemoClient

CLIENT_KINDS = ("sync", "async")


class AsyncDriver:
    """Drives an ``AsyncMnemoClient`` from synchronous code."""

    def __init__(self, target: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self.client: AsyncMnemoClient = self._loop.run_until_complete(self._open(target, options))

    @staticmethod
    async def _open(target: str, options: dict[str, Any]) -> AsyncMnemoClient:
        return AsyncMnemoClient(target, **options)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if not callable(attribute):
            return attribute
        return self._blocking(attribute)

    def _blocking(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if inspect.isawaitable(result):
                return self._loop.run_until_complete(result)
            if isinstance(result, AsyncIterator):
                return self._loop.run_until_complete(_collect(result))
            return result

        return call

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self.client.close())
        finally:
            self._loop.close()


async def _collect(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


@contextlib.contextmanager
def open_client(kind: str, target: str, **options: Any) -> Iterator[MnemoClient]:
    """A client of ``kind`` ("sync" or "async") for ``target``, closed afterwards.

    Typed as ``MnemoClient``: the driver offers the same methods; its list and
    stream methods return lists, which tests treat as any iterable.
    """
    if kind == "sync":
        with MnemoClient(target, **options) as client:
            yield client
        return
    driver = AsyncDriver(target, **options)
    try:
        yield cast(MnemoClient, driver)
    finally:
        driver.close()
