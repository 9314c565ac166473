"""The serving path's calls of the server's embedder (a recall's query, the
near-duplicate check's drafts): on a bounded pool of threads of their own,
never the event loop's default executor, and each waited for at most
``wait_seconds``.

An embedder's call may block for long: a remote provider that trickles its
answer holds a thread until the request's deadline (``embedders.remote``),
a caller's own class for as long as it likes. On a shared executor a few
such calls starve everything else that runs there; here they fill at most
``threads`` threads, a caller gives up after ``wait_seconds`` (recall then
falls back to lexical), and a call still queued when its caller gives up
never runs. The background embedder has threads of its own
(``embedding_worker``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from mnemo_server.domain.embedding import Embedder, EmbedderFailure

__all__ = ["CALL_THREADS", "WAIT_SECONDS", "EmbedderCalls"]

CALL_THREADS = 4
"""Threads of the pool: more than the cores of a typical server (the local
model's call is CPU-bound, a remote one waits on the network)."""
WAIT_SECONDS = 10.0
"""The longest a caller waits for one call, queueing included (a remote
query's own deadline is 5 s at most)."""

Vectors = list[tuple[float, ...]]


class EmbedderCalls:
    """Runs ``embedder``'s calls for waiting callers (see the module doc)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        threads: int = CALL_THREADS,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self.embedder = embedder
        self._wait = wait_seconds
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="mnemo-embedder-call")

    async def run(
        self, method: Callable[[Embedder, Sequence[str]], Vectors], texts: Sequence[str]
    ) -> Vectors:
        """``method(embedder, texts)`` on the pool. Raises what it raises, and
        ``EmbedderFailure`` (``timeout``) when it has not returned within
        ``wait_seconds``."""
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(self._pool, method, self.embedder, texts)
        try:
            return await asyncio.wait_for(call, self._wait)
        except TimeoutError:
            raise EmbedderFailure(
                f"the embedder did not answer within {self._wait:g} s", "timeout"
            ) from None

    def close(self) -> None:
        """Stop taking calls; queued ones are dropped, running ones end on
        their own (daemon-like: nothing waits for them)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
