"""The sharding audit: does every SQL statement the store runs on PostgreSQL
name the user it works on?

Sharded by user (Citus, ``docs/operations.md`` "Sharding by user"), a
statement is routed to one shard only when every per-user table it touches
is held to a user: ``t.user_id = :value`` (or ``IN``, ``= ANY``), directly or
through a chain of ``a.user_id = b.user_id`` equalities; an ``INSERT`` names
``user_id`` among its columns. ``unkeyed_tables(sql)`` lists the table
references of a statement that are not, from the SQL text alone (a small
tokenizer: string literals and comments blanked, parenthesized subqueries as
scopes for unqualified ``user_id``). It errs towards reporting: an unusual
form it does not understand shows up as unkeyed, for a person to look at.

``ShardAudit`` records the statements PostgreSQL connections run while it is
installed (through ``tests.support.statement_log.StatementLog``), each with
its origin, the innermost project frame that ran it:

- ``store``: the server's code (``server/mnemo_server``), audited;
- ``migration``: Alembic and the migration scripts (global by nature);
- ``test``: a test's own inspection queries (not the store's work).

``GLOBAL_STATEMENTS`` lists the store statements that are global on purpose,
each with its reason; ``tests/store/conftest.py`` fails a test whose store
statements include any other unkeyed one.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import psycopg

import mnemo_server
from mnemo_server.store.schema import metadata
from tests.support.statement_log import StatementLog

__all__ = [
    "GLOBAL_STATEMENTS",
    "PER_USER_TABLES",
    "REFERENCE_TABLES",
    "GlobalStatement",
    "ShardAudit",
    "unkeyed_tables",
]

PER_USER_TABLES = frozenset(t.name for t in metadata.tables.values() if "user_id" in t.c)
"""Every table with a ``user_id`` column (``store.schema``): all but the reference tables."""

REFERENCE_TABLES = frozenset({"app_states", "embedding_models", "user_erasures"})
"""Tables of no user (a reference table under Citus, ``docs/operations.md``):
``app_states`` is a tenant's state per app (AgentStateService),
``embedding_models`` the server's embedding models (backfill and lease),
``user_erasures`` the tenants' audit records of erasures (they outlive the
user they name, so they carry no ``user_id``).
Not audited: no statement on them needs a user to be routed."""


@dataclass(frozen=True)
class GlobalStatement:
    """A store statement that touches every user's rows on purpose."""

    pattern: re.Pattern[str]
    reason: str

    def matches(self, sql: str) -> bool:
        return self.pattern.search(sql) is not None


def _global(pattern: str, reason: str) -> GlobalStatement:
    return GlobalStatement(re.compile(pattern, re.IGNORECASE), reason)


GLOBAL_STATEMENTS: tuple[GlobalStatement, ...] = (
    _global(
        r"^SELECT .* FROM documents WHERE documents\.expire_at <=",
        "maintenance: the purge finds expired documents of every user "
        "(store.documents.writes; then deletes them one user at a time)",
    ),
    _global(
        r"^SELECT .* FROM conversations WHERE conversations\.expire_at <=",
        "maintenance: the purge finds expired temporary conversations of every user "
        "(store.conversations.temporary; then locks and deletes them one user at a time)",
    ),
    _global(
        r"^SELECT changes\.user_id, changes\.cursor FROM changes WHERE changes\.created_at < ",
        "maintenance: the change feed's retention prune finds every user's old changes "
        "(store.feed.changes; then deletes them one user at a time)",
    ),
    _global(
        r"^SELECT .* FROM idempotency_records WHERE idempotency_records\.created_at < ",
        "maintenance: the idempotency window's prune finds every user's old records "
        "(store.idempotency; then deletes them one user at a time)",
    ),
    _global(
        r"^SELECT embedding_backlog\.memory_pk, .* FROM embedding_backlog JOIN memories .* ORDER BY",
        "background embedding: the embedder takes the oldest entries waiting, whoever "
        "they belong to (store.memories.embedding_store; a fan-out per batch, off the "
        "serving path)",
    ),
    _global(
        r"^SELECT memories\.id, memories\.user_id FROM memories LEFT OUTER JOIN memory_embeddings",
        "background embedding: a new model's backfill walks every entry once, by id "
        "(store.memories.embedding_store)",
    ),
    _global(
        r"^SELECT coalesce\(max\(memories\.id\)",
        "background embedding: how far the backfill walks (store.memories.embedding_store)",
    ),
    _global(
        r"^SELECT count\(\*\) AS count_1 FROM embedding_backlog",
        "background embedding: the backlog's size for its metric and progress "
        "(store.memories.embedding_store)",
    ),
    _global(
        r"^SELECT count\(\*\) AS count_1, count\(\*\) FILTER .* FROM memory_embeddings",
        "background embedding: the vectors of a model, for progress (mnemo embeddings)",
    ),
)
"""The documented exceptions (``docs/operations.md``, "Sharding by user")."""


# ------------------------------------------------------------------ checker

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<param>%\(\w+\)s|%s|\$\d+|:\w+)
    | (?P<number>\d+(?:\.\d+)?)
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<op><>|!=|<=|>=|::|\|\||[=<>(),.;*+\-/%\[\]])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

# Words after which a table name comes.
_TABLE_BEFORE = frozenset({"from", "join", "update", "into", "using"})
# Words that end a FROM list (a comma no longer brings another table).
_CLAUSES = frozenset(
    {
        "where",
        "group",
        "order",
        "limit",
        "offset",
        "having",
        "on",
        "returning",
        "set",
        "values",
        "union",
        "except",
        "intersect",
        "for",
        "window",
        "select",
        "join",
        "inner",
        "left",
        "right",
        "full",
        "cross",
        "natural",
        "lateral",
        "do",
    }
)
_NOT_ALIAS = _CLAUSES | frozenset({"as", "only", "with", "and", "or", "not", "in", "using"})


@dataclass
class _Token:
    kind: str
    text: str
    scope: int


@dataclass
class _Reference:
    table: str
    name: str  # the alias, or the table's own name
    scope: int
    inserted_user_id: bool = False


def _tokens(sql: str) -> list[_Token]:
    """The tokens of ``sql`` (lowercased words, quoted identifiers unquoted,
    strings as one ``value``), each with its scope: a number per
    parenthesized group that holds a SELECT, 0 for the statement itself."""
    raw: list[tuple[str, str]] = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "other"
        text = match.group()
        if kind in ("space", "comment"):
            continue
        if kind == "quoted":
            kind, text = "word", text[1:-1].replace('""', '"')
        elif kind == "word":
            text = text.lower()
        elif kind in ("string", "number", "param"):
            kind = "value"
        raw.append((kind, text))
    tokens: list[_Token] = []
    stack = [0]
    scopes = 0
    for i, (kind, text) in enumerate(raw):
        if text == "(" and kind == "op":
            following = raw[i + 1][1] if i + 1 < len(raw) else ""
            if following in ("select", "with"):
                scopes += 1
                stack.append(scopes)
            else:
                stack.append(stack[-1])
            tokens.append(_Token(kind, text, stack[-2]))
            continue
        if text == ")" and kind == "op":
            tokens.append(_Token(kind, text, stack[-1]))
            if len(stack) > 1:
                stack.pop()
            continue
        if kind == "word" and text in ("union", "except", "intersect"):
            # Each branch of a set operation is a scope of its own.
            scopes += 1
            stack[-1] = scopes
        tokens.append(_Token(kind, text, stack[-1]))
    return tokens


def _references(tokens: list[_Token]) -> list[_Reference]:
    refs: list[_Reference] = []
    in_from_list = False
    for i, token in enumerate(tokens):
        starts = token.kind == "word" and token.text in _TABLE_BEFORE
        continues = in_from_list and token.text == ","
        if token.kind == "word" and token.text in _CLAUSES:
            in_from_list = False
        if not (starts or continues):
            continue
        j = i + 1
        if j < len(tokens) and tokens[j].text == "only":
            j += 1
        if j >= len(tokens) or tokens[j].kind != "word" or tokens[j].text in _NOT_ALIAS:
            continue
        table = tokens[j].text
        if j + 2 < len(tokens) and tokens[j + 1].text == "." and tokens[j + 2].kind == "word":
            j += 2
            table = tokens[j].text  # schema.table
        if j + 1 < len(tokens) and tokens[j + 1].text == "(" and token.text != "into":
            continue  # a function: unnest(...), generate_series(...)
        name = table
        k = j + 1
        if k < len(tokens) and tokens[k].text == "as":
            k += 1
        if k < len(tokens) and tokens[k].kind == "word" and tokens[k].text not in _NOT_ALIAS:
            name = tokens[k].text
        in_from_list = token.text in ("from", "using") or continues
        if table not in PER_USER_TABLES:
            continue
        ref = _Reference(table, name, tokens[j].scope)
        if token.text == "into":
            ref.inserted_user_id = _insert_names_user_id(tokens, j + 1)
        refs.append(ref)
    return refs


def _insert_names_user_id(tokens: list[_Token], start: int) -> bool:
    """``INSERT INTO t (..., user_id, ...)``: the column list names user_id."""
    if start >= len(tokens) or tokens[start].text != "(":
        return False
    depth = 0
    for token in tokens[start:]:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
            if depth == 0:
                return False
        elif depth == 1 and token.text == "user_id":
            return True
    return False


def _set_clause(tokens: list[_Token]) -> set[int]:
    """Indexes of the tokens of an UPDATE's SET clause (assignments, not conditions)."""
    inside: set[int] = set()
    start: int | None = None
    for i, token in enumerate(tokens):
        if token.kind != "word":
            continue
        if token.text == "set" and start is None and i > 0:
            start = i
        elif start is not None and token.text in ("where", "from", "returning"):
            inside.update(range(start, i))
            start = None
    if start is not None:
        inside.update(range(start, len(tokens)))
    return inside


class _Classes:
    """Union-find of ``user_id`` terms; a class holding a value is keyed."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.keyed: set[str] = set()

    def find(self, term: str) -> str:
        self.parent.setdefault(term, term)
        while self.parent[term] != term:
            self.parent[term] = self.parent[self.parent[term]]
            term = self.parent[term]
        return term

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.keyed:
                self.keyed.add(rb)

    def key(self, term: str) -> None:
        self.keyed.add(self.find(term))

    def is_keyed(self, term: str) -> bool:
        return self.find(term) in self.keyed


def _user_id_terms(tokens: list[_Token], refs: list[_Reference]) -> dict[int, str]:
    """Each ``user_id`` token (outside a SET clause) as a term ``scope:name``
    naming the reference it belongs to: by its qualifier, or, unqualified, the
    per-user reference of its scope (or of the nearest enclosing one)."""
    names = {ref.name for ref in refs}
    skip = _set_clause(tokens)
    terms: dict[int, str] = {}
    for i, token in enumerate(tokens):
        if token.text != "user_id" or i in skip:
            continue
        qualified = i >= 2 and tokens[i - 1].text == "."
        if qualified and tokens[i - 2].text not in names:
            continue
        if qualified:
            candidates = [r for r in refs if r.name == tokens[i - 2].text]
        else:
            candidates = refs
        ref = _nearest(candidates, token.scope)
        if ref is not None:
            terms[i] = f"{ref.scope}:{ref.name}"
    return terms


def _nearest(refs: list[_Reference], scope: int) -> _Reference | None:
    """The one reference of ``scope``, else of the nearest enclosing scope
    (a correlated subquery); ``None`` when that is ambiguous."""
    here = [r for r in refs if r.scope == scope]
    if not here:
        outer = [r for r in refs if r.scope < scope]
        if not outer:
            return refs[0] if len(refs) == 1 else None
        nearest = max(r.scope for r in outer)
        here = [r for r in outer if r.scope == nearest]
    return here[0] if len(here) == 1 else None


def _operand_end(tokens: list[_Token], i: int) -> int:
    """The index past the term starting at ``i`` (``a.b`` or ``b``)."""
    if i + 2 < len(tokens) and tokens[i + 1].text == "." and tokens[i + 2].kind == "word":
        return i + 3
    return i + 1


def unkeyed_tables(sql: str) -> list[str]:
    """The per-user tables ``sql`` touches without holding them to a user
    (``table`` or ``table AS alias``); ``[]`` when every one is keyed."""
    tokens = _tokens(sql)
    refs = _references(tokens)
    if not refs:
        return []
    terms = _user_id_terms(tokens, refs)
    classes = _Classes()
    for ref in refs:
        classes.find(f"{ref.scope}:{ref.name}")
        if ref.inserted_user_id:
            classes.key(f"{ref.scope}:{ref.name}")
    # A term is the token ``user_id``; its qualifier (if any) sits just before.
    starts = {i - 2 if i >= 2 and tokens[i - 1].text == "." else i: i for i in terms}
    for start, at in starts.items():
        term = terms[at]
        after = at + 1
        before = start - 1
        # term = value | term IN (...) | term = ANY (...) | term = term2
        if after < len(tokens) and tokens[after].text in ("=", "in"):
            right = after + 1
            if tokens[after].text == "in":
                classes.key(term)
            elif right < len(tokens):
                other = _term_at(tokens, terms, right)
                if other is not None:
                    classes.union(term, other)
                elif tokens[right].kind == "value" or tokens[right].text in ("any", "("):
                    classes.key(term)
        if before >= 0 and tokens[before].text == "=":
            left = before - 1
            if left >= 0 and tokens[left].kind == "value":
                classes.key(term)
    return [
        ref.table if ref.name == ref.table else f"{ref.table} AS {ref.name}"
        for ref in refs
        if not classes.is_keyed(f"{ref.scope}:{ref.name}")
    ]


def _term_at(tokens: list[_Token], terms: dict[int, str], i: int) -> str | None:
    end = _operand_end(tokens, i)
    at = end - 1
    return terms.get(at) if tokens[at].text == "user_id" else None


# ------------------------------------------------------------------ recorder

_SERVER = str(Path(mnemo_server.__file__).resolve().parent) + "/"
_MIGRATIONS = (_SERVER + "store/migrations/", _SERVER + "store/migrate.py")
_TESTS = str(Path(__file__).resolve().parents[1]) + "/"
_SUPPORT_SKIPPED = (_TESTS + "support/statement_log.py", str(Path(__file__).resolve()))


def _code_origin(code: CodeType) -> str | None:
    """``store``, ``migration``, ``test``, or ``None`` for a library's frame."""
    path = code.co_filename
    if path.startswith(_MIGRATIONS):
        return "migration"
    if path.startswith(_SERVER):
        return "store"
    if path.startswith(_TESTS) and not path.startswith(_SUPPORT_SKIPPED):
        return "test"
    return None


class ShardAudit(StatementLog):
    """The distinct PostgreSQL statements run while installed, by origin."""

    def __init__(self) -> None:
        super().__init__()
        self._origins: dict[CodeType, str | None] = {}
        self._seen_statements: dict[tuple[str, str], None] = {}
        self._audit_lock = threading.Lock()
        self._checked: dict[str, list[str]] = {}

    def _on_connect(self, dbapi_connection: Any, record: Any) -> None:
        if isinstance(dbapi_connection, psycopg.Connection):
            super()._on_connect(dbapi_connection, record)

    def _seen(self, sql: str) -> None:
        key = (self._origin(sys._getframe(1)), sql)
        if key not in self._seen_statements:
            with self._audit_lock:
                self._seen_statements[key] = None

    def _origin(self, frame: FrameType | None) -> str:
        while frame is not None:
            code = frame.f_code
            try:
                origin = self._origins[code]
            except KeyError:
                origin = self._origins[code] = _code_origin(code)
            if origin is not None:
                return origin
            frame = frame.f_back
        return "store"  # unknown: audited

    def take_distinct(self) -> list[tuple[str, str]]:
        """``(origin, sql)`` of each distinct statement since the last call."""
        with self._audit_lock:
            taken, self._seen_statements = list(self._seen_statements), {}
        return taken

    def violations(self) -> Iterator[str]:
        """The store statements since the last call that leave a per-user
        table unkeyed and are not in ``GLOBAL_STATEMENTS``."""
        for origin, sql in self.take_distinct():
            if origin != "store":
                continue
            statement = " ".join(sql.split())
            unkeyed = self._checked.get(statement)
            if unkeyed is None:
                unkeyed = self._checked[statement] = unkeyed_tables(statement)
            if unkeyed and not any(g.matches(statement) for g in GLOBAL_STATEMENTS):
                yield f"{', '.join(unkeyed)} without user_id in: {statement}"
