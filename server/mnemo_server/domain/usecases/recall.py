"""Recall and the "inject" context (gecx-chat's ``recall``, ``inject`` and
``hybrid`` read modes), on top of ``MemoryStore``.

Recall asks the store for the hits, which it ranks with ``domain.ranking``
over a bounded set of candidates in the same read:

- lexical: entries containing the query text's terms (none when the text has
  no searchable term), chosen by the terms' rarity (``ranking.lexical_plan``);
- semantic, only when the query is semantic: the exact top
  ``ranking.CANDIDATE_LIMIT`` entries by cosine similarity to the query's
  vector, which is the request's ``query_embedding`` or else the configured
  embedder's vector of the query text. Vectors are compared within one model
  only, so entries without a vector of that model are not semantic hits
  (entries the server still embeds in the background included; a recall
  that embeds its query first waits, bounded, for the entries this process
  queued for the user: ``embedding_worker``).

Only hits at or above the minimum relevance are returned or injected
(``domain.relevance``): the request's ``min_score``, else the server's
``min_relevance``, else the calibration's default; so a query nothing saved
is about returns nothing and injects an empty message.

Build context recalls ``4 * max_entries`` hits (at most
``MAX_RECALL_RESULTS``) so that entries skipped for the budget can be
replaced, then selects with ``domain.inject.build_context``.

Governance (``domain.governance``): recall returns nothing while consent is
withdrawn or memory is switched off; build context also returns nothing for a
temporary conversation. The gate and the candidates are read in one read
transaction (``MemoryStore.recall``); a semantic query's vector is
computed before it, and when computing it would hand the query's text to
the embedder (it is not in the query cache), the gate is read first, so
that no text of a closed gate reaches the embedder or its provider. Otherwise each call records ``memory_recalled``
(``count``, ``mode`` recall or inject, ``semantic``) after the read: a read
writes nothing itself, so the event rides the next batch of writes (within a
second; at shutdown at the latest: ``Database.defer``); a failure to record is
logged and never fails the call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from mnemo_server.domain import events, inject
from mnemo_server.domain.errors import Unavailable
from mnemo_server.domain.governance import Access, NewEvent
from mnemo_server.domain.identity import Caller
from mnemo_server.domain.memory_models import (
    MAX_RECALL_RESULTS,
    Embedding,
    InjectContext,
    RecallHit,
    RecallQuery,
)
from mnemo_server.domain.ports import GovernanceStore, MemoryStore
from mnemo_server.domain.usecases.memories import QueryEmbedding

CONTEXT_RECALL_FACTOR = 4
"""Build context considers this many hits per entry it may take."""

log = logging.getLogger(__name__)


Settle = Callable[[str], Awaitable[bool]]
"""Waits, bounded, until the entries a user saved are embedded
(``embedding_worker.EmbeddingWorker.settled``)."""


class Recall:
    """Ranked recall and inject contexts over one user's entries.
    ``settle``: what a recall that embeds its query waits for first, so
    that it finds by meaning what the user just saved."""

    def __init__(
        self,
        store: MemoryStore,
        embedding: QueryEmbedding,
        governance: GovernanceStore,
        settle: Settle | None = None,
        *,
        min_relevance: float | None = None,
    ) -> None:
        self._store = store
        self._embedding = embedding
        self._governance = governance
        self._settle = settle
        self._min_relevance = min_relevance

    async def _query_vector(self, user_id: str, query: RecallQuery) -> Embedding:
        if query.query_embedding is not None:
            return query.query_embedding
        if self._settle is None:
            return await self._embedding.embed_query(query.text)
        vector, _ = await asyncio.gather(
            self._embedding.embed_query(query.text), self._settle(user_id)
        )
        return vector

    async def recall(
        self, caller: Caller | None, user_id: str, query: RecallQuery
    ) -> list[RecallHit]:
        """The hits for ``query`` in ``user_id``'s entries, best first
        (``domain.ranking``); none while consent is withdrawn or memory is
        off. ``caller`` is who asks (named by the event when it is another).

        A query with a ``query_embedding`` and no text is semantic whatever
        its ``semantic`` flag says (there is nothing else to match); one
        that leaves ``semantic`` unset is semantic when this server has an
        embedder (fusion never ranked below lexical on the public
        benchmarks, docs/relevance.md), lexical otherwise. Raises
        ``EMBEDDER_UNAVAILABLE`` (semantic without a query vector on a server
        without an embedder), ``EMBEDDING_DIMENSION_MISMATCH`` (the query
        vector's dimension differs from the stored vectors of its model).
        """
        fallback = query.semantic is None
        query = self._effective(query)
        hits = await self._ranked(user_id, query, Access.RECALL, (), fallback=fallback)
        if hits is None:
            return []
        self._record(caller, user_id, events.recalled(len(hits), "recall", bool(query.semantic)))
        return hits

    async def _ranked(
        self,
        user_id: str,
        query: RecallQuery,
        access: Access,
        conversations: tuple[str, ...],
        *,
        fallback: bool = False,
    ) -> list[RecallHit] | None:
        """The ranked hits, read with the gate in one read transaction;
        ``None`` when a gate is closed for ``access``. ``fallback``: when the
        embedder fails on the query, recall lexically instead of raising
        ``EMBEDDER_FAILED`` (the caller left ``semantic`` unset)."""
        vector = None
        if query.semantic:
            if query.query_embedding is None and not self._embedding.cached(query.text):
                # The query's text is about to reach the embedder (and perhaps
                # its provider): only through an open gate. Without an embedder
                # there is nothing to search with: an error, unless a gate
                # says "nothing".
                if await self._governance.memory_gate(user_id, conversations, access):
                    return None
            try:
                vector = await self._query_vector(user_id, query)
            except Unavailable as error:
                if not fallback or error.reason != "EMBEDDER_FAILED":
                    raise
                query = replace(query, semantic=False)  # the failure is logged where it happened
        found = await self._store.recall(
            user_id, query, vector, access=access, conversation_ids=conversations
        )
        if found.gate is not None:
            return None
        return list(found.hits)

    async def build_context(
        self,
        caller: Caller | None,
        user_id: str,
        query: RecallQuery,
        *,
        max_entries: int,
        max_bytes: int,
    ) -> InjectContext:
        """The top entries for ``query`` under ``max_bytes`` bytes of text, as
        one system message (``domain.inject``). Deterministic: the same entries
        and request give the same message. Empty while consent is withdrawn or
        memory is off, and in a temporary conversation. Raises what ``recall``
        raises."""
        conversations = (query.conversation_id,) if query.conversation_id else ()
        wanted = min(CONTEXT_RECALL_FACTOR * max_entries, MAX_RECALL_RESULTS)
        fallback = query.semantic is None
        query = self._effective(replace(query, max_results=wanted))
        hits = await self._ranked(user_id, query, Access.INJECT, conversations, fallback=fallback)
        if hits is None:
            return inject.build_context([], max_entries=max_entries, max_bytes=max_bytes)
        built = inject.build_context(hits, max_entries=max_entries, max_bytes=max_bytes)
        count = len(built.memory_ids)
        self._record(caller, user_id, events.recalled(count, "inject", bool(query.semantic)))
        return built

    def _effective(self, query: RecallQuery) -> RecallQuery:
        """``query`` with its mode decided (a vector without text is semantic;
        an unset ``semantic`` is fused when this server has an embedder) and
        its minimum relevance (unset: the server's ``min_relevance``, else
        the calibration's default: ``domain.relevance``)."""
        if query.min_score is None and self._min_relevance is not None:
            query = replace(query, min_score=self._min_relevance)
        if not query.text and query.query_embedding is not None:
            return replace(query, semantic=True)
        if query.semantic is None:
            return replace(query, semantic=self._embedding.embedder is not None)
        return query

    def _record(self, caller: Caller | None, user_id: str, happened: list[NewEvent]) -> None:
        try:
            self._governance.record_events_later(caller, user_id, happened)
        except Exception:  # analytics must never fail a recall
            log.warning("could not record memory_recalled for %s", user_id, exc_info=True)
