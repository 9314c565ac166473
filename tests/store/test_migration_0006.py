"""Migration 0006 (Snowball stems, visibility-keyed index terms, term
statistics) on a populated database of every backend: entries written at
revision 0005 the way that revision wrote them (its stems, its full-text
rows, hashing-v1 vectors) are found by inflected forms after the upgrade,
the rebuilt index follows later writes and deletes, the term counts are the
live entries' own, and the old hashing vectors are recomputed."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import insert, select, text

from mnemo_server.domain.memory_models import Embedding, RecallQuery
from mnemo_server.domain.text_search import stems
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.embedders.hashing import HashingEmbedder
from mnemo_server.store import migrate
from mnemo_server.store.composed import SqlStore
from mnemo_server.store.engine.engines import migration_engine
from mnemo_server.store.memories.text_index import ENTRIES_TERM, search_document
from mnemo_server.store.schema import memories, memory_embeddings, memory_user_state, users
from mnemo_server.store.transactions.database import open_database
from tests.store import reads
from tests.store.memory_samples import draft
from tests.store.writes import create_memories, delete_memory

# (memory_id, user, conversation, text, archived, revision 0005's document)
ROWS = [
    ("m1", "alice", "", "The user likes sushi", False, "the user lik sushi"),
    ("m2", "alice", "", "Happiness is a long vacation", False, "happiness is a long vacation"),
    ("m3", "alice", "c1", "Organizing the liked recipes", False, "organizing the lik recip"),
    ("m4", "alice", "", "Liked sushi once", True, "lik sushi once"),  # archived
    ("m5", "bob", "", "Bob likes sushi too", False, "bob lik sushi too"),
]
OLD_MODEL = "mnemo-hashing-v1-8"
MICROS = 1_790_000_000_000_000


def _populate_at_0005(url: str) -> None:
    migrate.upgrade(url, "0005")
    engine = migration_engine(url)
    try:
        with engine.begin() as conn:
            for user in ("alice", "bob"):
                conn.execute(insert(users).values(user_id=user, created_at=MICROS))
                conn.execute(insert(memory_user_state).values(user_id=user, vectors_version=3))
            for n, (mid, user, conversation, body, archived, old) in enumerate(ROWS):
                pk = conn.execute(
                    insert(memories)
                    .values(
                        user_id=user,
                        memory_id=mid,
                        key="",
                        scope="conversation" if conversation else "identity",
                        conversation_id=conversation,
                        source="tool_call",
                        text=body,
                        metadata_json="{}",
                        pinned=False,
                        created_at=MICROS + n,
                        updated_at=MICROS + n,
                        archived_at=MICROS + 99 if archived else None,
                        etag=f"etag{n}",
                        version=1,
                        search_document=old,
                    )
                    .returning(memories.c.id)
                ).scalar_one()
                if conn.dialect.name == "sqlite" and not archived:
                    conn.execute(
                        text("INSERT INTO memories_fts(rowid, search_document) VALUES (:i, :d)"),
                        {"i": pk, "d": old},
                    )
                conn.execute(
                    insert(memory_embeddings).values(
                        memory_pk=pk,
                        user_id=user,
                        model=OLD_MODEL,
                        dimensions=8,
                        vector=encode_vector([1.0] + [0.0] * 7),  # not what v2 computes
                    )
                )
    finally:
        engine.dispose()


@pytest.mark.timeout(120)
async def test_upgrade_from_0005_rebuilds_terms_counts_and_vectors(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    _populate_at_0005(url)
    migrate.upgrade(url)
    assert migrate.current_revision(url) == migrate.head_revision()
    migrate.check_schema(url)

    engine = migration_engine(url)
    try:
        with engine.connect() as conn:
            documents = dict(
                conn.execute(select(memories.c.memory_id, memories.c.search_document)).all()
            )
            terms = {
                (user, term): n
                for user, term, n in conn.execute(
                    text("SELECT user_id, term, entries FROM memory_terms")
                )
            }
            vectors = {
                row.memory_id: (row.model, decode_vector(row.vector))
                for row in conn.execute(
                    select(
                        memories.c.memory_id, memory_embeddings.c.model, memory_embeddings.c.vector
                    ).join(memories, memories.c.id == memory_embeddings.c.memory_pk)
                )
            }
            versions = dict(conn.execute(select(memory_user_state)).all())
    finally:
        engine.dispose()

    for mid, user, conversation, body, _, _ in ROWS:
        assert documents[mid] == search_document(user, conversation, body), mid
    expected_terms: Counter[tuple[str, str]] = Counter()
    for _, user, _, body, archived, _ in ROWS:
        if not archived:
            expected_terms[(user, ENTRIES_TERM)] += 1
            expected_terms.update((user, t) for t in set(stems(body)))
    assert terms == dict(expected_terms)
    v2 = HashingEmbedder(8)
    assert set(vectors) == {mid for mid, *_ in ROWS}
    for mid, _, _, body, _, _ in ROWS:
        model, vector = vectors[mid]
        (computed,) = v2.embed([body])
        assert model == v2.model and vector == pytest.approx(computed, abs=1e-6), mid
    assert versions == {"alice": 4, "bob": 4}

    db = open_database(url)
    try:
        store = SqlStore(db)

        async def found(query: str, conversation: str = "") -> list[str]:
            return await reads.recalled_ids(
                store, "alice", RecallQuery(text=query, conversation_id=conversation)
            )

        # Forms the old stems did not join: like/likes/liked, happy/happiness,
        # vacations, organize/organizing, recipe.
        assert await found("liking sushi") == ["m1"]
        assert await found("happy vacations") == ["m2"]
        assert await found("organize recipe", "c1") == ["m3"]
        assert await found("organize recipe") == []  # m3 is c1's
        assert await found("once") == []  # m4 is archived
        # The rebuilt index follows writes and deletes.
        await delete_memory(store, "alice", "m1")
        await create_memories(store, "alice", [("m6", draft("Sushi lover"))])
        assert await found("sushi") == ["m6"]
        # The recomputed vectors are what the hashing-v2 embedder finds.
        (query,) = v2.embed(["Happiness is a long vacation"])
        nearest = await reads.recall(
            store, "alice", RecallQuery(text="", semantic=True), Embedding(v2.model, tuple(query))
        )
        assert nearest[0].memory.memory_id == "m2"
    finally:
        await db.close()
