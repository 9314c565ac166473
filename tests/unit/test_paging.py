"""store/paging.py: one page of a listing, and the statements it reads."""

from __future__ import annotations

from sqlalchemy import Column, Integer, MetaData, String, Table, select
from sqlalchemy.dialects import postgresql, sqlite

from mnemo_server.domain.models import Page
from mnemo_server.store import paging

_items = Table("items", MetaData(), Column("made", Integer), Column("name", String))


def _sql(statement: object, dialect: object) -> str:
    return " ".join(str(statement.compile(dialect=dialect)).split())  # type: ignore[attr-defined]


def test_a_page_keeps_limit_rows_and_resumes_after_the_last() -> None:
    found = [(3, "c"), (2, "b"), (1, "a")]
    assert paging.page(found, 2, lambda r: r[1], lambda r: (r[0],)) == Page(("c", "b"), (2,))
    assert paging.page(found, 3, lambda r: r[1], lambda r: (r[0],)) == Page(("c", "b", "a"))
    assert paging.page([], 3, lambda r: r, lambda r: ()) == Page(())


def test_typed_gives_each_value_its_column_type() -> None:
    assert paging.typed(("5", 7), (int, str)) == (5, "7")


def test_newest_first_reads_below_the_keyset_descending_one_row_more() -> None:
    keys = (_items.c.made, _items.c.name)
    first = paging.newest_first(select(_items), keys, None, 10)
    assert _sql(first, sqlite.dialect()).endswith(
        "ORDER BY items.made DESC, items.name DESC LIMIT ? OFFSET ?"
    )
    after = paging.newest_first(select(_items), keys, (5, "x"), 10)
    assert "WHERE (items.made, items.name) < (?, ?)" in _sql(after, sqlite.dialect())
    assert "WHERE (items.made, items.name) < (%(param_1)s::INTEGER" in _sql(
        after,
        postgresql.dialect(),  # type: ignore[no-untyped-call]
    )
    assert after.compile().params["param_1"] == 5
    assert after._limit == 11


def test_oldest_first_reads_above_the_keyset_ascending() -> None:
    after = paging.oldest_first(select(_items), (_items.c.made,), (5,), 3)
    sql = _sql(after, sqlite.dialect())
    assert "WHERE items.made > ? ORDER BY items.made LIMIT ? OFFSET ?" in sql
    assert after._limit == 4
