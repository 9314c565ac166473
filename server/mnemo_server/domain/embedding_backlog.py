"""What the background embedder (``usecases.embedding_worker``) and the store
(``ports.EmbeddingStore``) exchange.

A server with an embedder saves entries without waiting for their vectors:
an entry saved (or given new text) without a client's vector joins the
*backlog* in the transaction of its write, and the worker embeds the backlog
in batches and stores the vectors. A model the database has not seen before
(a new server, or a changed ``--embedder``) is *backfilled*: the worker walks
every entry once, in ``memories`` order, queuing those without a vector of the
model (a client's vector of another model is kept, and the entry simply
has none of the server's model).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_server.domain.memory_models import Embedding


@dataclass(frozen=True, slots=True)
class PendingText:
    """An entry of the backlog, as read: ``version`` is the entry's version
    whose ``text`` was read (a vector is stored only for that version)."""

    memory_pk: int
    user_id: str
    version: int
    text: str


@dataclass(frozen=True, slots=True)
class ComputedVector:
    """The server's vector of ``PendingText`` ``memory_pk`` at ``version``."""

    memory_pk: int
    user_id: str
    version: int
    embedding: Embedding


@dataclass(frozen=True, slots=True)
class BackfillStep:
    """One step of a model's backfill: how many entries it queued, how far
    (``memories.id``) the walk has come of how far it goes (``last``: the
    last entry when the lease was taken), and whether it is done."""

    queued: int
    through: int
    last: int
    done: bool


@dataclass(frozen=True, slots=True)
class EmbeddingProgress:
    """Where embedding with ``model`` stands: entries waiting (``backlog``),
    the backfill (``backfilled_through`` of ``backfill_until``, ``backfill_done``),
    the vectors of the model and how many the server computed, and which
    server process holds the lease (``holder``; empty when none)."""

    model: str
    backlog: int
    backfilled_through: int
    backfill_until: int
    backfill_done: bool
    vectors: int
    computed: int
    holder: str
