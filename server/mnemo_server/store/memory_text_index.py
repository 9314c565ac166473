"""The full-text index of memories on each backend, and the few SQL
expressions whose spelling differs between SQLite and PostgreSQL.

``domain.text_search`` does every linguistic step in Python; both backends
index ``memories.search_document`` (the stems, space separated) as is:

- SQLite: the contentless FTS5 table ``memories_fts`` (``tokenize='ascii'``,
  rowid = ``memories.id``) holds exactly the unarchived entries. FTS5 has no
  triggers here: the store writes it in the same transaction as the row
  (``index`` on insert, ``unindex`` on archive, update and delete). A
  contentless table must be told the exact document it indexed to delete it,
  which ``memories.search_document`` keeps.
- PostgreSQL: nothing to write; the partial GIN index ``ix_memories_search``
  on ``array_to_tsvector(string_to_array(search_document, ' '))`` follows
  the table (``WHERE archived_at IS NULL``).

Privacy: FTS5 (SQLite 3.40 here; its ``secure-delete`` option needs 3.42)
deletes by appending delete markers, and the old tokens stay in earlier
segments until those are merged. ``forget_deleted`` runs FTS5's
``optimize``, which merges every segment into one, so no token of a deleted
document remains; with ``PRAGMA secure_delete=ON`` (``store.engines``) the
freed pages are zeroed. It rewrites the whole index: its cost grows with the
total size of the index (every user of the file), which is why only deletes
pay it (measured on this 2-core machine: about 15 ms for a file of 10,000
entries, 120 ms for 100,000). On PostgreSQL, deleted tuples (in the table
and the GIN index) are unreachable at once and their space is reclaimed by
(auto)vacuum.

Queries (``lexical_match``): SQLite joins the FTS5 matches to ``memories``;
PostgreSQL filters ``memories`` with ``@@`` on the indexed expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    FromClause,
    Integer,
    and_,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY
from sqlalchemy.types import TypeEngine

from mnemo_server.domain.text_search import pg_tsquery_text, query_terms
from mnemo_server.store.schema import memories, memories_fts
from mnemo_server.store.statements import Statement, dialect_of
from mnemo_server.store.tx import Tx

_FTS_INSERT = text("INSERT INTO memories_fts(rowid, search_document) VALUES (:pk, :document)")
_FTS_DELETE = text(
    "INSERT INTO memories_fts(memories_fts, rowid, search_document) "
    "VALUES ('delete', :pk, :document)"
)
_FTS_OPTIMIZE = text("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
# Exactly the expression of the index (so that the planner uses it).
_PG_TSVECTOR: ColumnElement[Any] = literal_column(
    "array_to_tsvector(string_to_array(memories.search_document, ' '))"
)


_INDEX = Statement(_FTS_INSERT)
_UNINDEX = Statement(_FTS_DELETE)


def _sqlite(conn: Connection | Tx) -> bool:
    return dialect_of(conn) == "sqlite"


def index(conn: Connection | Tx, documents: Sequence[tuple[int, str]]) -> None:
    """Make live entries ``(memories.id, search_document)`` searchable."""
    if documents and _sqlite(conn):
        _INDEX.many(conn, [{"pk": pk, "document": doc} for pk, doc in documents])


def unindex(conn: Connection | Tx, documents: Sequence[tuple[int, str]]) -> None:
    """Stop searching entries ``(memories.id, search_document)`` that were
    live (``index``ed) with exactly that document."""
    if documents and _sqlite(conn):
        _UNINDEX.many(conn, [{"pk": pk, "document": doc} for pk, doc in documents])


def forget_deleted(conn: Connection) -> None:
    """Remove every trace of unindexed documents from the index (see the
    module doc for the cost)."""
    if _sqlite(conn):
        conn.execute(_FTS_OPTIMIZE)


@dataclass(frozen=True)
class LexicalMatch:
    """The entries whose search document shares a term with a query:
    ``SELECT ... FROM source WHERE condition``, where ``matched`` is how many
    of the query's distinct terms the entry holds (``text_search.matched_terms``
    in SQL). Only valid together with ``memories.c.archived_at.is_(None)``."""

    source: FromClause
    condition: ColumnElement[bool]
    matched: ColumnElement[int]


def _fts5_match(expression: str) -> ColumnElement[bool]:
    return literal_column("memories_fts").op("MATCH", is_comparison=True)(literal(expression))


def lexical_match(conn: Connection, query: str) -> LexicalMatch | None:
    """How to find the entries matching ``query`` (see ``LexicalMatch``);
    ``None`` when it has no term (nothing matches).

    ``matched`` is a sum of one membership test per term: on SQLite, the
    entry's rowid among that term's FTS5 matches (each term's matches are
    collected once per statement: half the cost of searching every matching
    document's text per term); on PostgreSQL, ``" term "`` within the
    space-padded search document (``strpos``; measured faster than splitting
    the document into an array per row).
    """
    terms = query_terms(query)
    if not terms:
        return None
    if _sqlite(conn):
        source: FromClause = memories_fts.join(memories, memories.c.id == memories_fts.c.rowid)
        condition = _fts5_match(" OR ".join(map(_fts5_phrase, terms)))
        per_term = [
            cast(
                memories.c.id.in_(select(memories_fts.c.rowid).where(_fts5_match(_fts5_phrase(t)))),
                Integer,
            )
            for t in terms
        ]
    else:
        source = memories
        condition = _PG_TSVECTOR.op("@@", is_comparison=True)(
            cast(literal(pg_tsquery_text(query)), TSQUERY)
        )
        padded = literal(" ") + memories.c.search_document + literal(" ")
        per_term = [cast(contains(conn, padded, f" {t} "), Integer) for t in terms]
    matched: ColumnElement[int] = sum(per_term[1:], per_term[0])
    return LexicalMatch(source, condition, matched)


def _fts5_phrase(term: str) -> str:
    """One term as an FTS5 string (as ``text_search.fts5_match_expression``
    quotes each term)."""
    return '"' + term.replace('"', '""') + '"'


def contains(conn: Connection, column: ColumnElement[str], needle: str) -> ColumnElement[bool]:
    """``needle`` occurs in ``column`` (exact, case-sensitive, no wildcards)."""
    finder = func.instr if _sqlite(conn) else func.strpos
    found: ColumnElement[bool] = finder(column, literal(needle)) > 0
    return found


def in_conversation(conversation_id: str) -> ColumnElement[bool]:
    """The entry is scoped to ``conversation_id`` (not ``""``)."""
    return and_(memories.c.scope == "conversation", memories.c.conversation_id == conversation_id)


def one_of(
    conn: Connection, column: ColumnElement[Any], values: Sequence[Any], item_type: TypeEngine[Any]
) -> ColumnElement[bool]:
    """``column IN values``. On PostgreSQL ``column IN (SELECT
    unnest(:array))``, one array parameter: psycopg prepares a statement
    that runs often, and in PostgreSQL's generic plan for it an ``IN`` list
    or ``= ANY(:array)`` is compared element by element with every row of the
    user (100,000 rows x 500 ids: seconds), where this form is a hash join."""
    if _sqlite(conn):
        return column.in_(values)
    return column.in_(select(func.unnest(literal(list(values), ARRAY(item_type)))))


def by_id(conn: Connection, column: ColumnElement[Any]) -> ColumnElement[Any]:
    """``column`` (an id) compared and ordered bytewise on every backend, as
    Python orders strings (PostgreSQL would use the database's collation)."""
    return column if _sqlite(conn) else column.collate("C")
