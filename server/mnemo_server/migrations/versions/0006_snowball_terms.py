"""Full text: the Snowball stemmer, per-user index terms and term statistics.

Rebuilds every entry's ``search_document`` with the Snowball English stems
of its text, each prefixed with the entry's visibility key
(``store.memory_text_index``), rebuilds the full-text index from it (SQLite:
the FTS5 table anew; PostgreSQL: the GIN index anew), creates
``memory_terms`` (per user, the live entries containing each stem, and
under ``""`` the live entries) filled from the live entries, and the
``(user_id, id)`` index recall walks for a user's newest entries.

Vectors of the hashing embedder (``mnemo-hashing-v1-N``, computed from the
old stems) are recomputed from the texts as ``mnemo-hashing-v2-N``, in the
entries and in the extraction candidates, and their users' vector version
moves on, so that every server process reloads them.

Runs the current code's ``search_document`` and ``HashingEmbedder`` (their
output at the time of this revision is what it writes). 5.3 s for
100,000 entries on SQLite on this project's 2-core machine (no hashing
vectors among them). There is no downgrade: the
old stems are not kept anywhere.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections import Counter, defaultdict

import sqlalchemy as sa
from alembic import op

from mnemo_server.domain.embedding import HashingEmbedder
from mnemo_server.domain.vectors import encode_vector
from mnemo_server.store.memory_text_index import ENTRIES_TERM, document_stems, search_document

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_CHUNK = 5000
_OLD_HASHING = "mnemo-hashing-v1-"

_SQLITE_FTS = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5(search_document, content='', tokenize='ascii')"
)
_POSTGRES_GIN = (
    "CREATE INDEX ix_memories_search ON memories USING gin "
    "(array_to_tsvector(string_to_array(search_document, ' '))) "
    "WITH (fastupdate = off) WHERE archived_at IS NULL"
)


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    op.create_table(
        "memory_terms",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.user_id"], name="fk_memory_terms_user_id_users"
        ),
        sa.PrimaryKeyConstraint("user_id", "term", name="pk_memory_terms"),
    )
    op.create_index("ix_memories_user_id_id", "memories", ["user_id", "id"])
    if sqlite:
        op.execute("DROP TABLE memories_fts")
        op.execute(_SQLITE_FTS)
    else:
        op.execute("DROP INDEX ix_memories_search")
    counts = _rebuild_documents(bind, sqlite)
    if counts:
        bind.execute(
            sa.text("INSERT INTO memory_terms (user_id, term, entries) VALUES (:u, :t, :n)"),
            [
                {"u": user_id, "t": term, "n": n}
                for user_id, terms in sorted(counts.items())
                for term, n in sorted(terms.items())
            ],
        )
    if not sqlite:
        op.execute(_POSTGRES_GIN)
    _rehash_vectors(bind)


def _rebuild_documents(bind: sa.Connection, sqlite: bool) -> dict[str, Counter[str]]:
    """New documents for every entry; the live ones indexed (SQLite) and
    counted. The term counts per user."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    last = 0
    while True:
        found = bind.execute(
            sa.text(
                "SELECT id, user_id, conversation_id, text, archived_at FROM memories "
                "WHERE id > :last ORDER BY id LIMIT :chunk"
            ),
            {"last": last, "chunk": _CHUNK},
        ).all()
        if not found:
            return counts
        last = found[-1].id
        documents = [
            (row.id, search_document(row.user_id, row.conversation_id, row.text)) for row in found
        ]
        bind.execute(
            sa.text("UPDATE memories SET search_document = :d WHERE id = :i"),
            [{"i": pk, "d": document} for pk, document in documents],
        )
        live = [
            (row, document)
            for row, (_, document) in zip(found, documents, strict=True)
            if row.archived_at is None
        ]
        if sqlite and live:
            bind.execute(
                sa.text("INSERT INTO memories_fts(rowid, search_document) VALUES (:i, :d)"),
                [{"i": row.id, "d": document} for row, document in live],
            )
        for row, document in live:
            user = counts[row.user_id]
            user[ENTRIES_TERM] += 1
            user.update(set(document_stems(document)))


def _embedder(model: str) -> HashingEmbedder:
    return HashingEmbedder(int(model.removeprefix(_OLD_HASHING)))


def _rehash_vectors(bind: sa.Connection) -> None:
    pattern = {"pattern": _OLD_HASHING + "%"}
    entries = bind.execute(
        sa.text(
            "SELECT e.memory_pk, e.model, m.user_id, m.text FROM memory_embeddings AS e "
            "JOIN memories AS m ON m.id = e.memory_pk WHERE e.model LIKE :pattern"
        ),
        pattern,
    ).all()
    for row in entries:
        embedder = _embedder(row.model)
        (vector,) = embedder.embed([row.text])
        bind.execute(
            sa.text(
                "UPDATE memory_embeddings SET model = :model, vector = :v WHERE memory_pk = :pk"
            ),
            {"model": embedder.model, "v": encode_vector(vector), "pk": row.memory_pk},
        )
    for user_id in sorted({row.user_id for row in entries}):
        bind.execute(
            sa.text(
                "UPDATE memory_user_state SET vectors_version = vectors_version + 1 "
                "WHERE user_id = :u"
            ),
            {"u": user_id},
        )
    candidates = bind.execute(
        sa.text(
            "SELECT user_id, candidate_id, embedding_model, text FROM memory_candidates "
            "WHERE embedding_model LIKE :pattern"
        ),
        pattern,
    ).all()
    for row in candidates:
        embedder = _embedder(row.embedding_model)
        (vector,) = embedder.embed([row.text])
        bind.execute(
            sa.text(
                "UPDATE memory_candidates SET embedding_model = :model, embedding = :v "
                "WHERE user_id = :u AND candidate_id = :c"
            ),
            {
                "model": embedder.model,
                "v": encode_vector(vector),
                "u": row.user_id,
                "c": row.candidate_id,
            },
        )


def downgrade() -> None:
    raise NotImplementedError("0006 cannot be undone: the old stems are not kept")
