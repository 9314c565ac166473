"""Keyset paging, the one way every listing of the store reads a page.

A listing reads ``limit + 1`` rows in the order of its keys, resuming after
the keyset of the last row of the page before (``newest_first``: below it,
keys descending; ``oldest_first``: above it, keys ascending); ``page`` keeps
the first ``limit`` and, when the extra row came back, gives the last kept
row's keyset as ``next_after``. The API turns that keyset into a page token
(``api.pagination``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Row, Select, tuple_

from mnemo_server.domain.models import Keyset, Page

__all__ = ["newest_first", "oldest_first", "page", "read_page", "typed"]

T = TypeVar("T")
R = TypeVar("R")


def typed(after: Keyset | None, kinds: Sequence[Callable[[Any], Any]]) -> Keyset | None:
    """A keyset read from a token, each value as its column holds it
    (``typed(after, (int, str))``); ``None`` (the first page) stays ``None``."""
    if after is None:
        return None
    return tuple(kind(value) for kind, value in zip(kinds, after, strict=True))


def _past(keys: Sequence[ColumnElement[Any]], after: Keyset, below: bool) -> ColumnElement[bool]:
    condition: ColumnElement[bool]
    if len(keys) == 1:
        condition = keys[0] < after[0] if below else keys[0] > after[0]
    else:
        condition = tuple_(*keys) < tuple_(*after) if below else tuple_(*keys) > tuple_(*after)
    return condition


def newest_first(
    statement: Select[Any], keys: Sequence[ColumnElement[Any]], after: Keyset | None, limit: int
) -> Select[Any]:
    """``statement`` in ``keys`` order descending, below keyset ``after``,
    ``limit + 1`` rows at the most."""
    return _ordered(statement, keys, after, limit, descending=True)


def oldest_first(
    statement: Select[Any], keys: Sequence[ColumnElement[Any]], after: Keyset | None, limit: int
) -> Select[Any]:
    """``statement`` in ``keys`` order ascending, above keyset ``after``,
    ``limit + 1`` rows at the most."""
    return _ordered(statement, keys, after, limit, descending=False)


def _ordered(
    statement: Select[Any],
    keys: Sequence[ColumnElement[Any]],
    after: Keyset | None,
    limit: int,
    *,
    descending: bool,
) -> Select[Any]:
    if after is not None:
        statement = statement.where(_past(keys, after, below=descending))
    order = [key.desc() for key in keys] if descending else list(keys)
    return statement.order_by(*order).limit(limit + 1)


def page(
    found: Sequence[R],
    limit: int,
    item: Callable[[R], T],
    keyset: Callable[[R], Keyset],
) -> Page[T]:
    """A page of the first ``limit`` of ``found`` (up to ``limit + 1`` rows
    read in keyset order); ``next_after`` is the last item's keyset if more
    rows follow."""
    items = tuple(item(row) for row in found[:limit])
    if len(found) <= limit:
        return Page(items)
    return Page(items, next_after=keyset(found[limit - 1]))


def read_page(
    conn: Connection,
    statement: Select[Any],
    limit: int,
    item: Callable[[Row[Any]], T],
    keyset: Callable[[Row[Any]], Keyset],
) -> Page[T]:
    """Run a ``newest_first`` or ``oldest_first`` statement: its ``page``."""
    return page(conn.execute(statement).all(), limit, item, keyset)
