"""The full-text index of memories on each backend, its term statistics, and
the reads recall selects candidates with.

``domain.text_search`` does every linguistic step in Python (tokens, Snowball
stems). The store indexes ``memories.search_document``: the entry's stems,
space separated, each prefixed with the entry's *visibility key*
(``visibility_key``: 16 hex digits of a BLAKE2b hash of the user id and the
entry's conversation id, ``""`` for identity entries). The same stem of two
users, or of two conversations of one user, is therefore a different index
term: a lookup reads only the entries the query may return, so its cost does
not grow with other users' entries (or with other conversations' entries).

- SQLite: the contentless FTS5 table ``memories_fts`` (``tokenize='ascii'``:
  it splits only at the spaces; rowid = ``memories.id``) holds exactly the
  unarchived entries. The store writes it in the same transaction as the row
  (``index`` on insert, ``unindex`` on archive, update and delete). A
  contentless table must be told the exact document it indexed to delete it,
  which ``memories.search_document`` keeps.
- PostgreSQL: nothing to write; the partial GIN index ``ix_memories_search``
  on ``array_to_tsvector(string_to_array(search_document, ' '))`` follows
  the table (``WHERE archived_at IS NULL``).
- Both: ``memory_terms`` holds, per user, how many live entries contain each
  stem, and (the term ``""``) how many live entries there are
  (``domain.ranking.TermStats``); ``index`` and ``unindex`` keep it in the
  same transaction, and a term no live entry contains has no row.

Privacy: FTS5 (SQLite 3.40 here; its ``secure-delete`` option needs 3.42)
deletes by appending delete markers, and the old tokens stay in earlier
segments until those are merged. ``forget_deleted`` runs FTS5's
``optimize``, which merges every segment into one, so no token of a deleted
document remains; with ``PRAGMA secure_delete=ON`` (``store.engine.engines``) the
freed pages are zeroed. It rewrites the whole index: its cost grows with the
total size of the index (every user of the file), which is why only deletes
pay it (measured on this 2-core machine: about 15 ms for a file of 10,000
entries, 120 ms for 100,000). Each ``optimize`` after new writes also adds a
level to the index, which FTS5 cannot read past about 2,000 levels; so past
``MAX_INDEX_LEVELS`` the index is rebuilt from the live entries (``delete-all``,
then every live document again), once in some 60 or more erasures.
On PostgreSQL, deleted tuples (in the table
and the GIN index) are unreachable at once and their space is reclaimed by
(auto)vacuum.

Candidate reads (``domain.ranking.lexical_plan`` says which): the entries
containing a *full* term (SQLite: an FTS5 ``MATCH``; PostgreSQL: ``@@`` on
the GIN-indexed expression), and the ``SAMPLE_SIZE`` newest (highest
``memories.id``) entries containing any *sampled* term (SQLite: FTS5 in
descending rowid order; PostgreSQL: the primary key walked backwards, each
entry's document searched with ``LIKE``). Both backends return the same
entries.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import TypeEngine

from mnemo_server.domain.ranking import SAMPLE_SIZE, Candidate, LexicalPlan, TermStats
from mnemo_server.domain.text_search import stems
from mnemo_server.store.engine.statements import Statement, dialect_of, list_parameter
from mnemo_server.store.transactions.tx import Tx

KEY_CHARS = 16
"""The length of a visibility key (hex digits)."""

ENTRIES_TERM = ""
"""The ``memory_terms`` row of a user that counts the live entries."""


def visibility_key(user_id: str, conversation_id: str) -> str:
    """The index prefix of the entries of ``user_id`` scoped to
    ``conversation_id`` (``""``: identity scope)."""
    seed = f"{user_id}\x1f{conversation_id}".encode()
    return hashlib.blake2b(seed, digest_size=KEY_CHARS // 2).hexdigest()


def search_document(user_id: str, conversation_id: str, text: str) -> str:
    """What the index holds for an entry: its stems, each prefixed with its
    visibility key, space separated (``""`` without words). Deterministic."""
    key = visibility_key(user_id, conversation_id)
    return " ".join(key + s for s in stems(text))


def document_stems(document: str) -> list[str]:
    """The stems of a ``search_document``, in order."""
    return [token[KEY_CHARS:] for token in document.split()]


# ------------------------------------------------------------------ upkeep

_INDEX = Statement(text("INSERT INTO memories_fts(rowid, search_document) VALUES (:pk, :document)"))
_UNINDEX = Statement(
    text(
        "INSERT INTO memories_fts(memories_fts, rowid, search_document) "
        "VALUES ('delete', :pk, :document)"
    )
)
_OPTIMIZE = text("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
# FTS5's structure record (rowid 10 of its data table): a 4-byte cookie, then
# the number of levels of the index as a varint.
_STRUCTURE = text("SELECT block FROM memories_fts_data WHERE id = 10")
_DELETE_ALL = text("INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')")
_REINDEX_LIVE = text(
    "INSERT INTO memories_fts(rowid, search_document) "
    "SELECT id, search_document FROM memories WHERE archived_at IS NULL"
)
MAX_INDEX_LEVELS = 64
"""Levels of the FTS5 index past which ``forget_deleted`` rebuilds it. Each
``optimize`` that follows new writes puts the merged segment one level
higher (SQLite 3.40 here), and past about 2,000 levels FTS5 can no longer
read its structure: every search and write of the file then fails
("database disk image is malformed"). A soak of two hours reached that after
some 1,000 erasures."""

# Counts as [[term, delta], ...] (SQLite: JSON; PostgreSQL: two arrays).
_ADD_TERMS = {
    "sqlite": Statement(
        text(
            "INSERT INTO memory_terms (user_id, term, entries) "
            "SELECT :user_id, json_extract(value, '$[0]'), json_extract(value, '$[1]') "
            "FROM json_each(:counts) WHERE true "
            "ON CONFLICT (user_id, term) DO UPDATE SET entries = entries + excluded.entries"
        )
    ),
    "postgresql": Statement(
        text(
            "INSERT INTO memory_terms (user_id, term, entries) "
            "SELECT :user_id, t, n FROM unnest(CAST(:terms AS text[]), CAST(:deltas AS integer[])) "
            "AS x(t, n) "
            "ON CONFLICT (user_id, term) DO UPDATE "
            "SET entries = memory_terms.entries + excluded.entries"
        )
    ),
}
_DROP_EMPTY_TERMS = {
    "sqlite": Statement(
        text(
            "DELETE FROM memory_terms WHERE user_id = :user_id AND entries <= 0 "
            "AND term IN (SELECT json_extract(value, '$[0]') FROM json_each(:counts))"
        )
    ),
    "postgresql": Statement(
        text(
            "DELETE FROM memory_terms WHERE user_id = :user_id AND entries <= 0 "
            "AND term = ANY(CAST(:terms AS text[]))"
        )
    ),
}


def _count_terms(documents: Iterable[str], sign: int) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter()
    for document in documents:
        counts[ENTRIES_TERM] += 1
        counts.update(set(document_stems(document)))
    return sorted((term, sign * n) for term, n in counts.items())


def _term_parameters(dialect: str, counts: list[tuple[str, int]]) -> dict[str, Any]:
    if dialect == "sqlite":
        return {"counts": json.dumps(counts, ensure_ascii=False, separators=(",", ":"))}
    return {"terms": [t for t, _ in counts], "deltas": [n for _, n in counts]}


def index(conn: Connection | Tx, user_id: str, documents: Sequence[tuple[int, str]]) -> None:
    """Make live entries ``(memories.id, search_document)`` of ``user_id``
    searchable and count their terms."""
    if not documents:
        return
    dialect = dialect_of(conn)
    if dialect == "sqlite":
        _INDEX.many(conn, [{"pk": pk, "document": doc} for pk, doc in documents])
    counts = _count_terms((doc for _, doc in documents), 1)
    _ADD_TERMS[dialect].execute(conn, user_id=user_id, **_term_parameters(dialect, counts))


def index_inserted(
    conn: Connection | Tx, user_id: str, pks: Sequence[int], rows: Sequence[Mapping[str, Any]]
) -> None:
    """``index`` the live ones of ``rows`` (``memories`` values just inserted
    as ``pks``, in that order): the archived ones are not searchable."""
    index(
        conn,
        user_id,
        [
            (pk, row["search_document"])
            for pk, row in zip(pks, rows, strict=True)
            if row["archived_at"] is None
        ],
    )


def pg_index_prefix(user_id: str, documents: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """PostgreSQL: ``index`` of live entries' ``documents`` as a ``WITH``
    clause to put before the statement that inserts them, and its
    parameters (``user_id``, ``terms``, ``deltas``); ``("", {})`` for none.
    (PostgreSQL searches ``memories.search_document`` itself: indexing an
    entry there is counting its terms.)"""
    if not documents:
        return "", {}
    counts = _count_terms(documents, 1)
    sql = _ADD_TERMS["postgresql"].sql("postgresql")
    return f"WITH terms AS ({sql}) ", {"user_id": user_id, **_term_parameters("postgresql", counts)}


def unindex(conn: Connection | Tx, user_id: str, documents: Sequence[tuple[int, str]]) -> None:
    """Stop searching entries ``(memories.id, search_document)`` of
    ``user_id`` that were live (``index``ed) with exactly that document, and
    stop counting their terms (a term left in no live entry loses its row)."""
    if not documents:
        return
    drop_documents(conn, documents)
    dialect = dialect_of(conn)
    parameters = _term_parameters(dialect, _count_terms((doc for _, doc in documents), -1))
    _ADD_TERMS[dialect].execute(conn, user_id=user_id, **parameters)
    _DROP_EMPTY_TERMS[dialect].execute(conn, user_id=user_id, **parameters)


def drop_documents(conn: Connection | Tx, documents: Sequence[tuple[int, str]]) -> None:
    """``unindex`` without the term counts, for an erasure that deletes the
    user's ``memory_terms`` rows itself."""
    if documents and dialect_of(conn) == "sqlite":
        _UNINDEX.many(conn, [{"pk": pk, "document": doc} for pk, doc in documents])


def forget_deleted(conn: Connection) -> None:
    """Remove every trace of unindexed documents from the index (see the
    module doc for the cost); rebuild it from the live entries when its
    levels pass ``MAX_INDEX_LEVELS``."""
    if dialect_of(conn) == "sqlite":
        conn.execute(_OPTIMIZE)
        if index_levels(conn) > MAX_INDEX_LEVELS:
            conn.execute(_DELETE_ALL)
            conn.execute(_REINDEX_LIVE)
            conn.execute(_OPTIMIZE)


def index_levels(conn: Connection) -> int:
    """SQLite: the number of levels of the FTS5 index (0 when it is empty)."""
    block = conn.execute(_STRUCTURE).scalar()
    if not block:
        return 0
    levels = 0
    for byte in bytes(block)[4:13]:  # an SQLite varint: 7 bits a byte, high bit = more
        levels = (levels << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return levels


# ------------------------------------------------------------------- reads

_TERM_STATS = {
    "sqlite": Statement(
        text(
            "SELECT term, entries FROM memory_terms WHERE user_id = :user_id "
            "AND term IN (SELECT value FROM json_each(:terms))"
        )
    ),
    "postgresql": Statement(
        text(
            "SELECT term, entries FROM memory_terms WHERE user_id = :user_id "
            "AND term = ANY(CAST(:terms AS text[]))"
        )
    ),
}


def term_stats(conn: Connection, user_id: str, terms: Sequence[str]) -> TermStats:
    """The user's entry count and the document frequencies of ``terms``."""
    dialect = dialect_of(conn)
    wanted = list_parameter(dialect, [ENTRIES_TERM, *terms])
    found = dict(_TERM_STATS[dialect].tuples(conn, user_id=user_id, terms=wanted))
    entries = int(found.pop(ENTRIES_TERM, 0))
    return TermStats(entries, {t: int(n) for t, n in found.items()})


_COMPACT = "m.memory_id, m.conversation_id, m.pinned, m.updated_at, m.search_document"

_FULL = {
    "sqlite": Statement(
        text(
            # CROSS JOIN: SQLite then keeps the full-text match as the outer
            # loop (a plain JOIN let it walk the user's entries and probe the
            # index per entry: 100 ms at 10,000 entries instead of 1).
            f"SELECT {_COMPACT} FROM memories_fts CROSS JOIN memories AS m "
            "ON m.id = memories_fts.rowid "
            "WHERE memories_fts MATCH :match AND m.user_id = :user_id AND m.archived_at IS NULL"
        )
    ),
    # The match through the GIN index (its tokens carry the user's
    # visibility keys), the user as a filter (``lexical_candidates`` keeps
    # PostgreSQL off a walk of the user's entries); the user named keeps it
    # on the user's shard when sharded.
    "postgresql": Statement(
        text(
            f"SELECT {_COMPACT} FROM memories AS m WHERE m.archived_at IS NULL "
            "AND m.user_id = :user_id "
            "AND array_to_tsvector(string_to_array(m.search_document, ' ')) "
            "@@ CAST(:match AS tsquery)"
        )
    ),
}
_SAMPLED_SQLITE = Statement(
    text(
        f"SELECT {_COMPACT} FROM memories AS m WHERE m.id IN ("
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH :match "
        "ORDER BY rowid DESC LIMIT :limit) "
        "AND m.user_id = :user_id AND m.archived_at IS NULL"
    )
)
# The user's entries walked newest first (the primary key backwards), each
# document's tokens compared with the sampled ones (array overlap: a quarter
# cheaper than LIKE over the document padded with spaces, the same entries;
# 10,000 entries, 199 queries: 0.73 -> 0.54 ms per walk, docs/performance.md).
_SAMPLED_POSTGRES = Statement(
    text(
        f"SELECT {_COMPACT} FROM memories AS m WHERE m.user_id = :user_id "
        "AND m.archived_at IS NULL "
        "AND string_to_array(m.search_document, ' ') && CAST(:tokens AS text[]) "
        "ORDER BY m.id DESC LIMIT :limit"
    )
)
# Planner settings of the candidate reads (see ``lexical_candidates``),
# local to the transaction and put back (to PostgreSQL's defaults) after.
_PLANNER = Statement(
    text(
        "SELECT set_config('enable_seqscan', :seqscan, true), "
        "set_config('enable_bitmapscan', :bitmapscan, true)"
    )
)


def _fts5_string(token: str) -> str:
    """One token as an FTS5 string: double-quoted (a quote inside doubled),
    so that no input reaches FTS5's operators."""
    return '"' + token.replace('"', '""') + '"'


def _pg_lexeme(token: str) -> str:
    """One token as a quoted tsquery lexeme (no parser, no dictionary)."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def candidates_of(found: Iterable[tuple[Any, ...]], lookup: dict[str, str]) -> list[Candidate]:
    """One candidate per entry (rows may repeat one), with its matched terms."""
    made: dict[str, Candidate] = {}
    tokens = frozenset(lookup)
    term = lookup.__getitem__
    for memory_id, conversation_id, pinned, updated_at, document in found:
        if memory_id in made:
            continue
        matched = frozenset(map(term, tokens.intersection(document.split())))
        made[memory_id] = Candidate(
            memory_id, conversation_id, bool(pinned), int(updated_at), matched
        )
    return list(made.values())


def term_lookup(user_id: str, conversations: Sequence[str], terms: Sequence[str]) -> dict[str, str]:
    """Each indexed token the query may match -> its term."""
    keys = [visibility_key(user_id, c) for c in conversations]
    return {key + term: term for term in terms for key in keys}


def lexical_candidates(
    conn: Connection,
    user_id: str,
    conversations: Sequence[str],
    terms: Sequence[str],
    plan: LexicalPlan,
) -> list[Candidate]:
    """The entries of ``plan`` among the live entries of ``user_id`` scoped
    to ``conversations`` (``""``: identity), each with the ``terms`` it
    contains (each entry once)."""
    if not conversations:
        return []
    lookup = term_lookup(user_id, conversations, terms)
    keys = [visibility_key(user_id, c) for c in conversations]
    dialect = dialect_of(conn)
    found: list[tuple[Any, ...]] = []
    if dialect == "sqlite":
        if plan.full:
            match = " OR ".join(_fts5_string(key + t) for t in plan.full for key in keys)
            found += _FULL[dialect].tuples(conn, user_id=user_id, match=match)
        if plan.sampled:
            match = " OR ".join(_fts5_string(key + t) for t in plan.sampled for key in keys)
            found += _SAMPLED_SQLITE.tuples(conn, user_id=user_id, match=match, limit=SAMPLE_SIZE)
        return candidates_of(found, lookup)
    # PostgreSQL has no statistics of the indexed expression until an
    # ANALYZE, and even with them it may price the GIN index above a scan
    # (10,000 entries: 17 ms scanned, 5 ms through the index); for the
    # sampled terms it would read every entry of the user and sort them,
    # where walking the newest entries stops after SAMPLE_SIZE matches. So
    # these two reads get the plans they need, for themselves only.
    if plan.full:
        _PLANNER.execute(conn, seqscan="off", bitmapscan="on")
        match = " | ".join(_pg_lexeme(key + t) for t in plan.full for key in keys)
        found += _FULL[dialect].tuples(conn, user_id=user_id, match=match)
    if plan.sampled:
        _PLANNER.execute(conn, seqscan="off", bitmapscan="off")
        tokens = [key + t for t in plan.sampled for key in keys]
        found += _SAMPLED_POSTGRES.tuples(conn, user_id=user_id, tokens=tokens, limit=SAMPLE_SIZE)
    if plan.full or plan.sampled:
        _PLANNER.execute(conn, seqscan="on", bitmapscan="on")
    return candidates_of(found, lookup)


_BY_ID = {
    "sqlite": Statement(
        text(
            f"SELECT {_COMPACT} FROM memories AS m WHERE m.user_id = :user_id "
            "AND m.archived_at IS NULL AND m.memory_id IN (SELECT value FROM json_each(:ids))"
        )
    ),
    "postgresql": Statement(
        text(
            f"SELECT {_COMPACT} FROM memories AS m WHERE m.user_id = :user_id "
            "AND m.archived_at IS NULL "
            "AND m.memory_id IN (SELECT unnest(CAST(:ids AS text[])))"
        )
    ),
}


def candidates_by_id(
    conn: Connection,
    user_id: str,
    conversations: Sequence[str],
    terms: Sequence[str],
    memory_ids: Sequence[str],
) -> list[Candidate]:
    """The live entries ``memory_ids`` of ``user_id`` as candidates, each
    with the ``terms`` it contains (absent ids are left out)."""
    if not memory_ids:
        return []
    dialect = dialect_of(conn)
    ids = list_parameter(dialect, memory_ids)
    found = _BY_ID[dialect].tuples(conn, user_id=user_id, ids=ids)
    return candidates_of(found, term_lookup(user_id, conversations, terms))


# ------------------------------------------- SQL spelled per backend (cold paths)
# (the other constructs spelled per backend: ``engine.dialect``)


def one_of(
    conn: Connection, column: ColumnElement[Any], values: Sequence[Any], item_type: TypeEngine[Any]
) -> ColumnElement[bool]:
    """``column IN values``. On PostgreSQL ``column IN (SELECT
    unnest(:array))``, one array parameter: psycopg prepares a statement
    that runs often, and in PostgreSQL's generic plan for it an ``IN`` list
    or ``= ANY(:array)`` is compared element by element with every row of the
    user (100,000 rows x 500 ids: seconds), where this form is a hash join."""
    if dialect_of(conn) == "sqlite":
        return column.in_(values)
    return column.in_(select(func.unnest(literal(list(values), ARRAY(item_type)))))
