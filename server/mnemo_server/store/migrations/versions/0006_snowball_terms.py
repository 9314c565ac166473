"""Full text: the Snowball stemmer, per-user index terms and term statistics.

Rebuilds every entry's ``search_document`` with the Snowball English stems
of its text, each prefixed with the entry's visibility key
(``store.memories.text_index``), rebuilds the full-text index from it (SQLite:
the FTS5 table anew; PostgreSQL: the GIN index anew), creates
``memory_terms`` (per user, the live entries containing each stem, and
under ``""`` the live entries) filled from the live entries, and the
``(user_id, id)`` index recall walks for a user's newest entries.

Vectors of the hashing embedder (``mnemo-hashing-v1-N``, computed from the
old stems) are recomputed from the texts as ``mnemo-hashing-v2-N``, in the
entries and in the extraction candidates, and their users' vector version
moves on, so that every server process reloads them.

Runs the current code's ``search_document`` and ``HashingEmbedder``
(``embedders.hashing``: the store's one import outside the domain, dependency
free; their output at the time of this revision is what it writes). 5.3 s for
100,000 entries on SQLite on this project's 2-core machine (no hashing
vectors among them).

The downgrade gives revision 0005 back what it had: every entry's document
made of 0005's stems (the rules are copied below, frozen: ``_legacy_*``), the
full-text index as 0002 defined it (SQLite: the FTS5 table holding the live
entries; PostgreSQL: the GIN index with its default pending list), the
``mnemo-hashing-v2-N`` vectors recomputed as ``mnemo-hashing-v1-N`` (their
users' vector version moves on), and neither ``memory_terms`` nor the
``(user_id, id)`` index. Upgrading again gives back exactly what the first
upgrade wrote: everything either direction writes is computed from the
entries' texts.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from mnemo_server.domain.vectors import encode_vector
from mnemo_server.embedders.hashing import HashingEmbedder
from mnemo_server.store.memories.text_index import ENTRIES_TERM, document_stems, search_document

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
# Revision 0002's, for the downgrade.
_POSTGRES_GIN_0005 = (
    "CREATE INDEX ix_memories_search ON memories USING gin "
    "(array_to_tsvector(string_to_array(search_document, ' '))) "
    "WHERE archived_at IS NULL"
)
_NEW_HASHING = "mnemo-hashing-v2-"

# Entries (id, text, archived_at, ...) with their new search documents.
Documents = list[tuple[sa.Row[Any], str]]
# (model, text) -> (the model's new name, the text's vector in it)
Vectorize = Callable[[str, str], tuple[str, tuple[float, ...]]]


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
    _empty_index(sqlite)
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


def _empty_index(sqlite: bool) -> None:
    """SQLite: the FTS5 table anew and empty; PostgreSQL: no GIN index."""
    if sqlite:
        op.execute("DROP TABLE memories_fts")
        op.execute(_SQLITE_FTS)
    else:
        op.execute("DROP INDEX ix_memories_search")


def _chunks(bind: sa.Connection) -> Iterator[list[sa.Row[Any]]]:
    """Every entry, in chunks of ``_CHUNK`` by id."""
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
            return
        last = found[-1].id
        yield list(found)


def _write_documents(bind: sa.Connection, sqlite: bool, documents: Documents) -> None:
    """Each entry's new document; on SQLite the live ones into the FTS5 table."""
    bind.execute(
        sa.text("UPDATE memories SET search_document = :d WHERE id = :i"),
        [{"i": row.id, "d": document} for row, document in documents],
    )
    live = [{"i": row.id, "d": doc} for row, doc in documents if row.archived_at is None]
    if sqlite and live:
        bind.execute(
            sa.text("INSERT INTO memories_fts(rowid, search_document) VALUES (:i, :d)"), live
        )


def _rebuild_documents(bind: sa.Connection, sqlite: bool) -> dict[str, Counter[str]]:
    """New documents for every entry; the live ones indexed (SQLite) and
    counted. The term counts per user."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for found in _chunks(bind):
        documents = [
            (row, search_document(row.user_id, row.conversation_id, row.text)) for row in found
        ]
        _write_documents(bind, sqlite, documents)
        for row, document in documents:
            if row.archived_at is None:
                user = counts[row.user_id]
                user[ENTRIES_TERM] += 1
                user.update(set(document_stems(document)))
    return counts


def _v2(model: str, text: str) -> tuple[str, tuple[float, ...]]:
    embedder = HashingEmbedder(int(model.removeprefix(_OLD_HASHING)))
    (vector,) = embedder.embed([text])
    return embedder.model, vector


def _rehash_vectors(
    bind: sa.Connection, prefix: str = _OLD_HASHING, vectorize: Vectorize = _v2
) -> None:
    """Recompute the vectors (entries and candidates) of the hashing models
    named ``prefix`` + dimensions with ``vectorize(model, text)``."""
    pattern = {"pattern": prefix + "%"}
    entries = bind.execute(
        sa.text(
            "SELECT e.memory_pk, e.model, m.user_id, m.text FROM memory_embeddings AS e "
            "JOIN memories AS m ON m.id = e.memory_pk WHERE e.model LIKE :pattern"
        ),
        pattern,
    ).all()
    for row in entries:
        model, vector = vectorize(row.model, row.text)
        bind.execute(
            sa.text(
                "UPDATE memory_embeddings SET model = :model, vector = :v WHERE memory_pk = :pk"
            ),
            {"model": model, "v": encode_vector(vector), "pk": row.memory_pk},
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
        model, vector = vectorize(row.embedding_model, row.text)
        bind.execute(
            sa.text(
                "UPDATE memory_candidates SET embedding_model = :model, embedding = :v "
                "WHERE user_id = :u AND candidate_id = :c"
            ),
            {
                "model": model,
                "v": encode_vector(vector),
                "u": row.user_id,
                "c": row.candidate_id,
            },
        )


def downgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    _empty_index(sqlite)
    for found in _chunks(bind):
        _write_documents(bind, sqlite, [(row, _legacy_document(row.text)) for row in found])
    if not sqlite:
        op.execute(_POSTGRES_GIN_0005)
    _rehash_vectors(bind, _NEW_HASHING, _v1)
    op.drop_index("ix_memories_user_id_id", table_name="memories")
    op.drop_table("memory_terms")


# Revision 0005's text normalization and stems (domain.text_search and the
# hashing embedder as they were then), frozen here for the downgrade.

_LEGACY_TOKEN = re.compile(r"[^\W_]+")
_LEGACY_MAX_TOKEN_CHARS = 64
_LEGACY_UNDOUBLE_EXCEPT = frozenset("lsz")
_LEGACY_VOWELS = frozenset("aeiouy")


def _legacy_fold_char(ch: str) -> str:
    decomposed = unicodedata.normalize("NFD", ch)
    base = "".join(c for c in decomposed if not unicodedata.combining(c))
    return base if base.isascii() and base else ch


def _legacy_tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    if not folded.isascii():
        folded = "".join(_legacy_fold_char(ch) if not ch.isascii() else ch for ch in folded)
    return [t for t in _LEGACY_TOKEN.findall(folded) if len(t) <= _LEGACY_MAX_TOKEN_CHARS]


def _legacy_strip_plural(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _legacy_strip_verb_suffix(word: str) -> str:
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and not word.endswith("eed"):
            rest = word[: -len(suffix)]
            if len(rest) >= 2 and any(ch in _LEGACY_VOWELS for ch in rest):
                if (
                    len(rest) >= 3
                    and rest[-1] == rest[-2]
                    and rest[-1] not in _LEGACY_UNDOUBLE_EXCEPT
                ):
                    rest = rest[:-1]
                return rest
    return word


def _legacy_stem(word: str) -> str:
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    base = _legacy_strip_verb_suffix(_legacy_strip_plural(word))
    if base.endswith("e") and len(base) >= 3:
        base = base[:-1]
    return base


def _legacy_document(text: str) -> str:
    """Revision 0005's ``search_document(text)``."""
    return " ".join(_legacy_stem(t) for t in _legacy_tokens(text))


def _v1(model: str, text: str) -> tuple[str, tuple[float, ...]]:
    """Revision 0005's ``HashingEmbedder`` (``mnemo-hashing-v1-N``)."""
    dimensions = int(model.removeprefix(_NEW_HASHING))
    values = [0.0] * dimensions
    for term in _legacy_document(text).split():
        digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
        number = int.from_bytes(digest, "big")
        values[number % dimensions] += 1.0 if number >> 63 else -1.0
    length = math.hypot(*values)
    if length == 0.0:
        values[0] = 1.0
        return _OLD_HASHING + str(dimensions), tuple(values)
    return _OLD_HASHING + str(dimensions), tuple(v / length for v in values)
