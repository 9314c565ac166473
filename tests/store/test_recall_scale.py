"""Recall at scale (functional): 10,000 memories of one user, and exact
vector search over 100,000 (slow); on every backend."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from mnemo_server.domain.memory_models import Embedding, MemoryDraft, RecallQuery
from mnemo_server.domain.ranking import CANDIDATE_LIMIT, rank
from mnemo_server.domain.text_search import STOP_WORDS, document_terms, stem
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store.sql import SqlStore
from tests.store import reads
from tests.store.memory_samples import bulk_create, draft
from tests.support.memory_corpus import Corpus

NOISE = 10_000 - 7
DIMENSIONS = 16


@pytest.mark.timeout(300)
async def test_recall_over_10000_memories_finds_the_planted_entries(sql_store: SqlStore) -> None:
    corpus = Corpus(seed=11)
    noise: list[tuple[str, MemoryDraft]] = []
    for n, text in enumerate(corpus.sentences(NOISE)):
        # Never the query's conversation c1: only p3 is scoped to it.
        conversation = ("", "", "", "c2", "c3")[n % 5]
        key = f"k{n % 50}" if n % 10 == 0 else ""  # keyed chains: most of them archived
        noise.append(
            (
                f"n{n:05}",
                draft(text, conversation=conversation, key=key, vector=corpus.vector(DIMENSIONS)),
            )
        )
    # The most frequent content term of the noise: it matches far more
    # entries than the store returns (CANDIDATE_LIMIT), so the cap is exercised.
    frequent = Counter(t for _, d in noise for t in document_terms(d.text) if t not in STOP_WORDS)
    common, count = frequent.most_common(1)[0]
    assert count > 2 * CANDIDATE_LIMIT
    close = [1.0] + [0.0] * (DIMENSIONS - 1)
    planted = [
        ("p1", draft("Severely allergic to peanuts and shellfish", vector=close)),
        ("p2", draft("Allergic to peanuts since childhood")),
        ("p3", draft("Shellfish dinner planned at the harbour", conversation="c1")),
        ("p4", draft("Peanut butter sandwiches for lunch", pinned=True)),
        ("p5", draft("Allergic to peanuts and shellfish, confirmed", conversation="c2")),
        ("p6", draft("Allergic to peanuts, shellfish and pollen", key="allergy")),
        ("p7", draft("No longer allergic to pollen", key="allergy")),  # archives p6
    ]
    await bulk_create(sql_store, "alice", noise)
    await bulk_create(sql_store, "alice", planted)

    # A common noise word in the query: thousands of one-term matches.
    query = RecallQuery(
        text=f"allergic to peanuts and shellfish {common}", conversation_id="c1", max_results=6
    )
    lexical = await reads.lexical_candidates(sql_store, "alice", query, limit=CANDIDATE_LIMIT)
    assert len(lexical) == CANDIDATE_LIMIT
    hits = rank(query, lexical)
    ids = [hit.memory.memory_id for hit in hits]
    # Three terms; two; one in the current conversation; one pinned; then the
    # most recently updated one-term match (p7 was saved after the noise).
    assert ids[:5] == ["p1", "p2", "p3", "p4", "p7"]
    assert ids[5].startswith("n") and hits[0].score == pytest.approx(3 / 4)
    assert all(m.memory_id not in ("p5", "p6") for m in lexical)

    semantic_query = RecallQuery(
        text="allergic", conversation_id="c1", semantic=True, max_results=3
    )
    embedding = Embedding("test-model", tuple([0.9, 0.1] + [0.0] * (DIMENSIONS - 2)))
    nearest = await reads.semantic_candidates(
        sql_store, "alice", semantic_query, embedding, limit=CANDIDATE_LIMIT
    )
    assert nearest[0].memory.memory_id == "p1" and len(nearest) == CANDIDATE_LIMIT
    lexical = await reads.lexical_candidates(
        sql_store, "alice", semantic_query, limit=CANDIDATE_LIMIT
    )
    fused = rank(semantic_query, lexical, nearest)
    assert fused[0].memory.memory_id == "p1"
    assert stem("peanuts") in document_terms(fused[0].memory.text)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_semantic_search_is_exact_over_100000_vectors(sql_store: SqlStore) -> None:
    rng = random.Random(5)
    dimensions = 8
    items = [
        (f"v{n:06}", draft(f"entry {n}", vector=[rng.gauss(0.0, 1.0) for _ in range(dimensions)]))
        for n in range(100_000)
    ]
    await bulk_create(sql_store, "alice", items)
    stored = np.array(
        [decode_vector(encode_vector(d.embedding.values)) for _, d in items if d.embedding],
        dtype=np.float64,
    )
    unit_rows = stored / np.linalg.norm(stored, axis=1, keepdims=True)
    for trial in range(5):
        query = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
        cosines = unit_rows @ (np.array(query) / np.linalg.norm(query))
        expected = [f"v{int(i):06}" for i in np.argsort(-cosines, kind="stable")[:20]]
        found = await reads.semantic_candidates(
            sql_store,
            "alice",
            RecallQuery(text=""),
            Embedding("test-model", tuple(query)),
            limit=20,
        )
        assert [m.memory.memory_id for m in found] == expected, trial
        assert [m.similarity for m in found] == pytest.approx(
            sorted(cosines, reverse=True)[:20], abs=1e-9
        )
