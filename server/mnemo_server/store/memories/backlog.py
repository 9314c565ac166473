"""The embedding backlog's entry points for the save paths, which live in
``vectors`` (the one seam to the server's embedder): ``queue`` collects an
entry left without a vector on the write's ``Tx``, ``unqueue`` takes one
off. Kept for the modules that import them from here (``update``,
``user_data.load``)."""

from __future__ import annotations

from mnemo_server.store.memories.vectors import queue as queue
from mnemo_server.store.memories.vectors import unqueue as unqueue

__all__ = ["queue", "unqueue"]
