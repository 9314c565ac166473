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
pay it. On PostgreSQL, deleted tuples (in the table and the GIN index) are
unreachable at once and their space is reclaimed by (auto)vacuum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY
from sqlalchemy.types import TypeEngine

from mnemo_server.domain.text_search import fts5_match_expression, pg_tsquery_text
from mnemo_server.store.schema import memories, memories_fts

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


def _sqlite(conn: Connection) -> bool:
    return conn.dialect.name == "sqlite"


def index(conn: Connection, documents: Sequence[tuple[int, str]]) -> None:
    """Make live entries ``(memories.id, search_document)`` searchable."""
    if documents and _sqlite(conn):
        conn.execute(_FTS_INSERT, [{"pk": pk, "document": doc} for pk, doc in documents])


def unindex(conn: Connection, documents: Sequence[tuple[int, str]]) -> None:
    """Stop searching entries ``(memories.id, search_document)`` that were
    live (``index``ed) with exactly that document."""
    if documents and _sqlite(conn):
        conn.execute(_FTS_DELETE, [{"pk": pk, "document": doc} for pk, doc in documents])


def forget_deleted(conn: Connection) -> None:
    """Remove every trace of unindexed documents from the index (see the
    module doc for the cost)."""
    if _sqlite(conn):
        conn.execute(_FTS_OPTIMIZE)


def matches(conn: Connection, query: str) -> ColumnElement[bool] | None:
    """A condition on ``memories``: its search document shares a term with
    ``query``; ``None`` when the query has no term (nothing matches). Only
    valid together with ``memories.c.archived_at.is_(None)``."""
    if _sqlite(conn):
        expression = fts5_match_expression(query)
        if expression is None:
            return None
        matching = literal_column("memories_fts").op("MATCH")(literal(expression))
        return memories.c.id.in_(select(memories_fts.c.rowid).where(matching))
    tsquery = pg_tsquery_text(query)
    if tsquery is None:
        return None
    condition: ColumnElement[bool] = _PG_TSVECTOR.op("@@", is_comparison=True)(
        cast(literal(tsquery), TSQUERY)
    )
    return condition


def contains(conn: Connection, column: ColumnElement[str], needle: str) -> ColumnElement[bool]:
    """``needle`` occurs in ``column`` (exact, case-sensitive, no wildcards)."""
    finder = func.instr if _sqlite(conn) else func.strpos
    found: ColumnElement[bool] = finder(column, literal(needle)) > 0
    return found


def matched_terms(conn: Connection, terms: Sequence[str]) -> ColumnElement[int]:
    """How many of the distinct ``terms`` the entry's search document holds:
    the SQL form of ``domain.text_search.matched_terms``."""
    padded = literal(" ") + memories.c.search_document + literal(" ")
    counts = [
        case((contains(conn, padded, f" {term} "), 1), else_=0) for term in dict.fromkeys(terms)
    ]
    total: ColumnElement[int] = sum(counts[1:], counts[0]) if counts else literal(0)
    return total


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
