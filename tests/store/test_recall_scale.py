"""Recall at scale (functional): 10,000 memories of one user, and exact
vector search over 100,000 (slow); on every backend."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from sqlalchemy import Connection

from mnemo_server.domain.memory_models import Embedding, MemoryDraft, RecallQuery
from mnemo_server.domain.ranking import FULL_BUDGET, TermStats, lexical_plan
from mnemo_server.domain.relevance import LEXICAL
from mnemo_server.domain.sameness import fingerprint
from mnemo_server.domain.text_search import STOP_WORDS, query_terms, stem, stems
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.memories import recall as recall_reads
from mnemo_server.store.memories import text_index
from tests.store import reads
from tests.store.memory_samples import bulk_create, draft
from tests.support.memory_corpus import Corpus

NOISE = 10_000 - 7
DIMENSIONS = 16


@pytest.mark.timeout(300)
async def test_recall_over_10000_memories_finds_the_planted_entries(sql_store: SqlStore) -> None:
    corpus = Corpus(seed=11)
    noise: list[tuple[str, MemoryDraft]] = []
    # Each text once: a repeated one would be stored once (domain.sameness).
    texts = list({fingerprint(text): text for text in corpus.sentences(NOISE)}.values())
    for n, text in enumerate(texts):
        # Never the query's conversation c1: only p3 is scoped to it.
        conversation = ("", "", "", "c2", "c3")[n % 5]
        key = f"k{n % 50}" if n % 10 == 0 else ""  # keyed chains: most of them archived
        noise.append(
            (
                f"n{n:05}",
                draft(text, conversation=conversation, key=key, vector=corpus.vector(DIMENSIONS)),
            )
        )
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
    # The live entries: a keyed chain keeps its last entry (saved in order).
    last_of_key = {d.key: mid for mid, d in noise + planted if d.key}
    live = [(mid, d) for mid, d in noise + planted if not d.key or last_of_key[d.key] == mid]

    # The most frequent content term of the live noise: far more entries
    # contain it than a full term may bring (FULL_BUDGET), so it is sampled.
    frequent = Counter(t for _, d in live for t in set(stems(d.text)) if t not in STOP_WORDS)
    common, count = frequent.most_common(1)[0]
    assert count > 2 * FULL_BUDGET
    query = RecallQuery(
        text=f"allergic to peanuts and shellfish {common}", conversation_id="c1", max_results=6
    )
    terms = query_terms(query.text)

    def stats_of(conn: Connection) -> TermStats:
        return text_index.term_stats(conn, "alice", terms)

    stats = await sql_store.database.read(stats_of)
    # The statistics the writes kept are the corpus's own.
    assert stats.entries == len(live)
    assert dict(stats.frequencies) == {
        t: n for t in terms if (n := sum(t in set(stems(d.text)) for _, d in live))
    }
    plan = lexical_plan(terms, stats)
    assert common in plan.sampled

    hits = await reads.recall(sql_store, "alice", query)
    ids = [hit.memory.memory_id for hit in hits]
    # Three rare terms; two; then the one-term matches, the rarer term first
    # (p3 in the current conversation, p4 pinned, p7 saved last), never the
    # noise's common word before them.
    assert ids[:2] == ["p1", "p2"]
    assert set(ids[2:5]) == {"p3", "p4", "p7"}
    assert ids[5].startswith("n")
    assert LEXICAL.relevance(3 / 4, None, 10_000) < hits[0].score < 1
    assert not {"p5", "p6"} & set(ids)

    semantic_query = RecallQuery(
        text="allergic", conversation_id="c1", semantic=True, max_results=3
    )
    embedding = Embedding("test-model", tuple([0.9, 0.1] + [0.0] * (DIMENSIONS - 2)))
    fused = await reads.recall(sql_store, "alice", semantic_query, embedding)
    assert fused[0].memory.memory_id == "p1"
    assert stem("peanuts") in set(stems(fused[0].memory.text))


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
        embedding = Embedding("test-model", tuple(query))

        def nearest(conn: Connection, embedding: Embedding = embedding) -> dict[str, float]:
            return recall_reads.semantic(
                conn, "alice", ("",), embedding, 20, sql_store.vector_cache
            )

        found = list((await sql_store.database.read(nearest)).items())
        assert [mid for mid, _ in found] == expected, trial
        assert [cosine for _, cosine in found] == pytest.approx(
            sorted(cosines, reverse=True)[:20], abs=1e-9
        )
