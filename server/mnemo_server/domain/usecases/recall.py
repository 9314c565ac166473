"""Recall and the "inject" context (gecx-chat's ``recall``, ``inject`` and
``hybrid`` read modes), on top of ``MemoryStore``.

Recall asks the store for two candidate lists and lets ``domain.ranking``
order them:

- lexical: up to ``ranking.CANDIDATE_LIMIT`` full-text matches of the query
  text (none when the text has no searchable term);
- semantic, only when the query is semantic: the exact top
  ``ranking.CANDIDATE_LIMIT`` entries by cosine similarity to the query's
  vector, which is the request's ``query_embedding`` or else the configured
  embedder's vector of the query text. Vectors are compared within one model
  only, so entries without a vector of that model are not semantic hits.

Build context recalls ``4 * max_entries`` hits (at most
``MAX_RECALL_RESULTS``) so that entries skipped for the budget can be
replaced, then selects with ``domain.inject.build_context``.
"""

from __future__ import annotations

from dataclasses import replace

from mnemo_server.domain import inject, ranking
from mnemo_server.domain.embedding import embedder_unavailable
from mnemo_server.domain.memory_models import (
    MAX_RECALL_RESULTS,
    Embedding,
    InjectContext,
    Memory,
    RecallHit,
    RecallQuery,
)
from mnemo_server.domain.ranking import SemanticMatch
from mnemo_server.domain.text_search import query_terms
from mnemo_server.domain.usecases.memories import DraftEmbedding
from mnemo_server.store.interfaces import MemoryStore

CONTEXT_RECALL_FACTOR = 4
"""Build context considers this many hits per entry it may take."""


class Recall:
    """Ranked recall and inject contexts over one user's entries."""

    def __init__(self, store: MemoryStore, embedding: DraftEmbedding) -> None:
        self._store = store
        self._embedding = embedding

    async def _query_vector(self, query: RecallQuery) -> Embedding:
        if query.query_embedding is not None:
            return query.query_embedding
        if self._embedding.embedder is None:
            raise embedder_unavailable()
        (vector,) = await self._embedding.embed([query.text])
        return vector

    async def recall(self, user_id: str, query: RecallQuery) -> list[RecallHit]:
        """The hits for ``query``, best first (``domain.ranking``).

        A query with a ``query_embedding`` and no text is semantic whatever
        its ``semantic`` flag says (there is nothing else to match). Raises
        ``EMBEDDER_UNAVAILABLE`` (semantic without a query vector on a server
        without an embedder), ``EMBEDDING_DIMENSION_MISMATCH`` (the query
        vector's dimension differs from the stored vectors of its model).
        """
        if not query.text and query.query_embedding is not None:
            query = replace(query, semantic=True)
        lexical: list[Memory] = []
        if query_terms(query.text):
            lexical = await self._store.lexical_candidates(
                user_id, query, limit=ranking.CANDIDATE_LIMIT
            )
        semantic: list[SemanticMatch] = []
        if query.semantic:
            vector = await self._query_vector(query)
            semantic = await self._store.semantic_candidates(
                user_id, query, vector, limit=ranking.CANDIDATE_LIMIT
            )
        return ranking.rank(query, lexical, semantic)

    async def build_context(
        self, user_id: str, query: RecallQuery, *, max_entries: int, max_bytes: int
    ) -> InjectContext:
        """The top entries for ``query`` under ``max_bytes`` bytes of text, as
        one system message (``domain.inject``). Deterministic: the same entries
        and request give the same message. Raises what ``recall`` raises."""
        wanted = min(CONTEXT_RECALL_FACTOR * max_entries, MAX_RECALL_RESULTS)
        hits = await self.recall(user_id, replace(query, max_results=wanted))
        return inject.build_context(hits, max_entries=max_entries, max_bytes=max_bytes)
