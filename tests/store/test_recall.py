"""Recall (MemoryStore.recall): full-text matches in the same order on SQLite
FTS5 and PostgreSQL (one expected list per query, for both backends),
visibility, and exact semantic top-k with the vector cache kept correct
across store instances."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from sqlalchemy import Connection

from mnemo_server.domain.errors import Entry, InvalidArgument, Part
from mnemo_server.domain.memory_models import (
    Embedding,
    MemoryChange,
    MemoryDraft,
    RecallQuery,
    RecallScope,
)
from mnemo_server.domain.ranking import visible_conversations
from mnemo_server.domain.relevance import DEFAULT_MODEL
from mnemo_server.domain.text_search import query_terms, stems
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.memories import recall as recall_reads
from mnemo_server.store.transactions.database import Database
from tests.store import reads
from tests.store.memory_samples import draft, save
from tests.store.writes import create_memories, delete_memory, update_memory
from tests.support.vectors import cosine

# Saved in one call: equal update times, so the order below depends on
# matched terms, the current conversation, pinned and the id only.
FIXTURE: list[tuple[str, MemoryDraft]] = [
    ("f01", draft("The user likes sushi and ramen.")),
    ("f02", draft("The user is allergic to peanuts.")),
    ("f03", draft("User has a peanut allergy")),
    ("f04", draft("Prefers vegan recipes")),
    ("f05", draft("Runs in shoe stores on weekends")),
    ("f06", draft("Went running yesterday; runs every day")),
    ("f07", draft("Loves hiking in the mountains")),
    ("f08", draft("Café au lait every morning")),
    ("f09", draft("Order RMA-1234: shoes arrived late", conversation="c1")),
    ("f10", draft("Running shoes order for the marathon", conversation="c2")),
    ("f11", draft("Likes running with a friend", pinned=True)),
    ("f12", draft("Studies Japanese every morning")),
    ("f13", draft("Likes a cafe crema", key="drink")),
    ("f14", draft("Prefers decaf coffee", key="drink")),  # archives f13
]

# (query, conversation, scope) -> the hits, in order, on every backend.
EXPECTED = [
    # Stemming: running/runs -> run, shoes/shoe -> shoe. Both terms first; then
    # "shoe" (in fewer entries than "run": it weighs more); among equal
    # matches, the current conversation, then pinned, then id.
    (("running shoes", "c1", RecallScope.ANY), ["f05", "f09", "f11", "f06"]),
    (("peanut allergies", "", RecallScope.ANY), ["f03", "f02"]),
    # Diacritics folded; the archived f13 never.
    (("cafe", "", RecallScope.ANY), ["f08"]),
    (("likes", "c2", RecallScope.ANY), ["f11", "f01"]),
    (("order shoes", "c1", RecallScope.CONVERSATION), ["f09"]),
    (("order shoes", "c1", RecallScope.IDENTITY), ["f05"]),
    (("order shoes", "", RecallScope.CONVERSATION), []),
    (("order shoes", "c3", RecallScope.ANY), ["f05"]),
    # Nothing but stop words: then they are searched for (f02 and f07 tie:
    # the newer first, f07 being saved after f02 as separate saves would be).
    (("the and of", "", RecallScope.ANY), ["f01", "f07", "f02"]),
    (("marathon", "c2", RecallScope.ANY), ["f10"]),
    (("marathon", "", RecallScope.ANY), []),
    (("", "", RecallScope.ANY), []),
    (('NEAR(a b) OR * "x', "", RecallScope.ANY), []),
]


@pytest.fixture
def store(sql_store: SqlStore) -> SqlStore:
    return sql_store


def _query(
    text: str,
    conversation: str = "",
    scope: RecallScope = RecallScope.ANY,
    *,
    semantic: bool = False,
) -> RecallQuery:
    return RecallQuery(text=text, conversation_id=conversation, scope=scope, semantic=semantic)


async def semantic(
    store: SqlStore, user_id: str, query: RecallQuery, embedding: Embedding, *, limit: int
) -> list[tuple[str, float]]:
    """The store's exact nearest entries and their cosines."""

    def read(conn: Connection) -> list[tuple[str, float]]:
        found = recall_reads.semantic(
            conn, user_id, visible_conversations(query), embedding, limit, store.vector_cache
        )
        return list(found.items())

    return await store.database.read(read)


async def test_lexical_hits_are_the_same_on_every_backend(store: SqlStore) -> None:
    await create_memories(store, "alice", FIXTURE)
    await create_memories(store, "bob", [("f01", draft("Bob likes running shoes"))])
    for (text, conversation, scope), expected in EXPECTED:
        query = _query(text, conversation, scope)
        assert await reads.recalled_ids(store, "alice", query) == expected, (
            text,
            conversation,
            scope,
        )
    # A shorter list is a prefix of that order.
    capped = await reads.recalled_ids(store, "alice", _query("running shoes", "c1"), limit=2)
    assert capped == ["f05", "f09"]


HOSTILE_QUERIES = [
    '"',
    "'",
    "*",
    "a*",
    '"abc"*',
    "NEAR(a b)",
    "AND",
    "OR OR OR",
    "NOT x",
    "((a)",
    "col:term",
    "search_document:x",
    "{a b}:c",
    "^start",
    "a & b | !c",
    "a <-> b",
    "a:*",
    "\\'",
    "'; DROP TABLE memories; --",
    "\x00",
    "\u200b",
    "💥🔥",
    "日本語のテキスト",
    "ＦＵＬＬＷＩＤＴＨ",
    "İstanbul straße",
    "x" * 65,
    " ".join(f"w{i}" for i in range(500)),
    "shoes -running",
    "cafe* OR likes",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
async def test_hostile_queries_match_what_their_terms_match(store: SqlStore, query: str) -> None:
    """Every query is only its terms: FTS5 and tsquery syntax in it is text."""
    await create_memories(store, "alice", FIXTURE)
    terms = set(query_terms(query))
    live = FIXTURE[:12] + FIXTURE[13:]  # f13 is archived
    expected = {mid for mid, d in live if not d.conversation_id and terms & set(stems(d.text))}
    found = await reads.recalled_ids(store, "alice", _query(query), limit=50)
    assert set(found) == expected


async def test_updates_and_deletes_reach_the_index(store: SqlStore) -> None:
    await create_memories(store, "alice", FIXTURE)
    await update_memory(store, "alice", "f07", MemoryChange(text="Loves running marathons"))
    await delete_memory(store, "alice", "f05")
    found = await reads.recalled_ids(store, "alice", _query("running hiking"))
    assert found == ["f11", "f07", "f06"]  # f07: updated last
    assert await reads.recalled_ids(store, "alice", _query("mountains")) == []
    # The archived f13 got a new text: still never recalled.
    await update_memory(store, "alice", "f13", MemoryChange(text="Likes espresso"))
    assert await reads.recalled_ids(store, "alice", _query("espresso")) == []


def _unit(values: list[float]) -> list[float]:
    length = math.hypot(*values)
    return [v / length for v in values]


async def test_semantic_candidates_are_the_exact_top_k(store: SqlStore) -> None:
    vectors = {
        "v1": [1.0, 0.0, 0.0],
        "v2": [0.9, 0.1, 0.0],
        "v3": [0.0, 1.0, 0.0],
        "v4": [0.5, 0.5, 0.1],
        "v5": [-1.0, 0.0, 0.0],
        "v6": [1.8, 0.2, 0.0],  # the same direction as v2: equal cosine, id breaks the tie
    }
    await create_memories(
        store, "alice", [(k, draft(f"entry {k}", vector=v)) for k, v in vectors.items()]
    )
    await save(store, "c2", draft("other conversation", conversation="c2", vector=[1.0, 0.0, 0.0]))
    await save(store, "x1", draft("other model", vector=[1.0, 0.0, 0.0], model="other"))
    query = [1.0, 0.05, 0.0]
    embedding = Embedding("test-model", tuple(query))
    nearest = await semantic(store, "alice", _query("", "c1"), embedding, limit=4)
    assert [m for m, _ in nearest] == ["v1", "v2", "v6", "v4"]
    for memory_id, similarity in nearest:
        stored = decode_vector(encode_vector(vectors[memory_id]))  # float32
        assert similarity == pytest.approx(cosine(query, stored), abs=1e-12)
    # Through recall: the semantic rank alone orders a query without text
    # (v5 points away from the query: not a hit), equal scores the newer
    # first (v6 is saved after v2, as separate saves in order would be).
    everything = await reads.recalled_ids(
        store, "alice", _query("", "c2", semantic=True), embedding
    )
    assert everything == ["c2", "v1", "v6", "v2", "v4", "v3"]
    only_conversation = await reads.recalled_ids(
        store, "alice", _query("", "c2", RecallScope.CONVERSATION, semantic=True), embedding
    )
    assert only_conversation == ["c2"]
    unknown = Embedding("unknown-model", (1.0,))
    assert await reads.recalled_ids(store, "alice", _query("", semantic=True), unknown) == []
    other_user = Embedding("test-model", (1.0, 0.0, 0.0))
    assert await reads.recalled_ids(store, "bob", _query("", semantic=True), other_user) == []
    # A caller's vector of another dimension is the caller's mistake...
    short = Embedding("test-model", (1.0, 0.0))
    with pytest.raises(InvalidArgument) as mismatch:
        await reads.recall(
            store, "alice", replace(_query("", semantic=True), query_embedding=short), short
        )
    assert mismatch.value.reason == "EMBEDDING_DIMENSION_MISMATCH"
    assert mismatch.value.entry == Entry(Part.QUERY_EMBEDDING)  # the API names the field
    assert mismatch.value.violations == ()
    # ...one of the server's embedder is not: it finds no semantic candidate.
    assert await reads.recalled_ids(store, "alice", _query("", semantic=True), short) == []


async def test_the_vector_cache_follows_writes_of_other_processes(
    database: Database,
) -> None:
    # Two stores with their own caches over one database stand for two server
    # processes: each must see the other's writes at once.
    reader, writer = SqlStore(database), SqlStore(database)
    query = Embedding("test-model", tuple(_unit([1.0, 1.0])))

    async def top() -> list[str]:
        return [m for m, _ in await semantic(reader, "alice", _query(""), query, limit=2)]

    await save(writer, "a", draft("a", vector=[1.0, 0.0]))
    await save(writer, "b", draft("b", vector=[0.0, 1.0]))
    assert await top() == ["a", "b"]
    assert reader.vector_cache.cached_bytes > 0
    await save(writer, "c", draft("c", vector=[1.0, 0.9]))
    assert await top() == ["c", "a"]
    await update_memory(
        writer, "alice", "a", MemoryChange(embedding=Embedding("test-model", (1.0, 1.0)))
    )
    assert await top() == ["a", "c"]
    await delete_memory(writer, "alice", "a")
    assert await top() == ["c", "b"]
    # A keyed save archives: the archived entry's vector is not searched.
    await save(writer, "d", draft("d", key="k", vector=[1.0, 0.95]))
    await save(writer, "e", draft("e", key="k", vector=[0.0, 1.0]))
    assert await top() == ["c", "b"]
    found = await semantic(reader, "alice", _query(""), query, limit=10)
    assert [m for m, _ in found] == ["c", "b", "e"]


async def test_an_entry_without_a_vector_yet_is_judged_by_its_words(store: SqlStore) -> None:
    """A fused recall with the default model's calibration (the judgement's
    minimum applies) keeps an entry that has no vector of the query's model
    (saved a moment ago, not embedded yet) when its words answer the query:
    it is judged as lexical recall judges, not as a cosine of 0."""
    model = DEFAULT_MODEL
    unrelated = [1.0, 0.0, 0.0, 0.0]
    await create_memories(
        store,
        "alice",
        [
            ("old", draft("Drives a red car", vector=unrelated, model=model)),
            ("new", draft("Severely allergic to peanuts")),  # no vector yet
        ],
    )
    query = RecallQuery(text="allergic to peanuts", semantic=True)
    away = Embedding(model, (0.0, 1.0, 0.0, 0.0))  # points away from every vector
    assert await reads.recalled_ids(store, "alice", query, away) == ["new"]
