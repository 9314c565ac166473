"""Query normalization, stemming and the FTS expressions, checked against a
real SQLite FTS5 table (and, marked postgres, a real PostgreSQL tsvector)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo_server.domain.text_search import (
    MAX_QUERY_TERMS,
    MAX_TOKEN_CHARS,
    fts5_match_expression,
    matched_terms,
    pg_tsquery_terms,
    pg_tsquery_text,
    query_terms,
    search_document,
    singular,
    stem,
    tokens,
)

HOSTILE_QUERIES = [
    '"',
    '""',
    "'",
    "*",
    "a*",
    '"abc"*',
    "NEAR(a b)",
    "NEAR",
    "AND",
    "OR OR OR",
    "NOT x",
    "x NOT",
    "(",
    ")",
    "((a)",
    "col:term",
    "search_document:x",
    "{a b}:c",
    "^start",
    "a + b",
    "-x",
    "a & b | !c",
    "a <-> b",
    "a:*",
    "x:AB",
    "\\",
    "\\'",
    "'; DROP TABLE t; --",
    "\x00",
    "\u200b",
    "💥🔥",
    "日本語のテキスト",
    "ＦＵＬＬＷＩＤＴＨ",
    "Ǆemal",
    "İstanbul",
    "straße",
    "x" * (MAX_TOKEN_CHARS + 1),
    " ".join(f"w{i}" for i in range(500)),
    "",
    "   ",
    "!!!",
]

DOCS = [
    "The user likes sushi and ramen.",
    "The user is allergic to peanuts.",
    "User has a peanut allergy",
    "Prefers vegan recipes",
    "This conversation is about an order RMA-1234.",
    "The user's name is Ada Lovelace.",
    "Loves hiking in the mountains",
    "Went running yesterday; runs every day",
    "Studies Japanese: 日本語を勉強しています",
    "Café au lait every morning, Crème brûlée for dessert",
    "Email me at ada@example.com or see https://example.com/path",
    "version 1.2.3 and 3.14 and 1e5",
]


def fts5_table(documents: Sequence[str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE memories USING fts5(search_document, tokenize='ascii')")
    db.executemany(
        "INSERT INTO memories(rowid, search_document) VALUES (?, ?)",
        [(i, search_document(d)) for i, d in enumerate(documents)],
    )
    return db


def fts5_hits(db: sqlite3.Connection, query: str) -> set[int]:
    expression = fts5_match_expression(query)
    if expression is None:
        return set()
    rows = db.execute(
        "SELECT rowid FROM memories WHERE memories MATCH ? ORDER BY bm25(memories)",
        (expression,),
    )
    return {row[0] for row in rows}


def python_hits(documents: Sequence[str], query: str) -> set[int]:
    terms = query_terms(query)
    return {i for i, d in enumerate(documents) if matched_terms(terms, d) > 0}


# --- tokens and stems --------------------------------------------------------------


def test_tokens_normalize_case_width_diacritics_and_split_on_underscore() -> None:
    assert tokens("Ｈello WORLD") == ["hello", "world"]
    assert tokens("Café CRÈME brûlée") == ["cafe", "creme", "brulee"]
    assert tokens("snake_case foo-bar ada@example.com") == [
        "snake",
        "case",
        "foo",
        "bar",
        "ada",
        "example",
        "com",
    ]
    assert tokens("Straße") == ["strasse"]
    assert tokens("日本語 テキスト") == ["日本語", "テキスト"]


def test_tokens_drop_overlong_tokens() -> None:
    assert tokens("a" * MAX_TOKEN_CHARS + " b" + " c" * 2) == ["a" * MAX_TOKEN_CHARS, "b", "c", "c"]
    assert tokens("x" * (MAX_TOKEN_CHARS + 1) + " keep") == ["keep"]


@pytest.mark.parametrize(
    "forms",
    [
        ("like", "likes", "liked", "liking"),
        ("love", "loves", "loved", "loving"),
        ("run", "runs", "running"),
        ("study", "studies", "studied", "studying"),
        ("allergy", "allergies"),
        ("box", "boxes"),
        ("class", "classes"),
        ("wish", "wishes", "wished"),
        ("watch", "watches", "watched", "watching"),
        ("hike", "hikes", "hiked", "hiking"),
        ("stop", "stops", "stopped", "stopping"),
        ("fall", "falls", "falling"),
        ("play", "plays", "played", "playing"),
        ("try", "tries", "tried"),
        ("house", "houses"),
        ("recipe", "recipes"),
        ("peanut", "peanuts"),
    ],
)
def test_simple_english_forms_share_a_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(f) for f in forms}) == 1, {f: stem(f) for f in forms}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("cat", "cat"),
        ("bus", "bus"),
        ("this", "this"),
        ("paris", "paris"),
        ("virus", "virus"),
        ("need", "need"),
        ("speed", "speed"),
        ("1990s", "1990s"),
        ("日本語", "日本語"),
        ("cafés", "cafés"),
    ],
)
def test_stem_leaves_short_foreign_and_protected_words(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_singular_only_strips_plurals() -> None:
    assert [singular(w) for w in ("foods", "allergies", "boxes", "liked", "dog")] == [
        "food",
        "allergy",
        "box",
        "liked",
        "dog",
    ]


# --- query terms ---------------------------------------------------------------------


def test_query_terms_drop_stop_words_and_duplicates_in_order() -> None:
    assert query_terms("What foods do I like? I like FOOD!") == ("food", "lik")


def test_query_of_only_stop_words_searches_them() -> None:
    assert query_terms("The Who") == ("the", "who")


def test_query_terms_are_capped() -> None:
    many = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS + 10))
    terms = query_terms(many)
    assert len(terms) == MAX_QUERY_TERMS
    assert terms[0] == "word0"


@pytest.mark.parametrize("query", ["", "   ", "!!!", "*", '"', "💥", "_"])
def test_queries_without_terms_give_no_expression(query: str) -> None:
    assert query_terms(query) == ()
    assert fts5_match_expression(query) is None
    assert pg_tsquery_text(query) is None
    assert pg_tsquery_terms(query) == []


def test_expressions_quote_every_term() -> None:
    assert fts5_match_expression("NEAR(sushi OR ramen)") == '"near" OR "sushi" OR "ramen"'
    assert pg_tsquery_text("sushi & !ramen") == "'sushi' | 'ramen'"


def test_matched_terms_counts_distinct_stems() -> None:
    terms = query_terms("peanut allergies recipes")
    assert terms == ("peanut", "allergy", "recip")
    assert matched_terms(terms, "User has a peanut allergy") == 2
    assert matched_terms(terms, "Peanuts, peanuts, PEANUTS") == 1
    assert matched_terms(terms, "nothing relevant") == 0
    assert matched_terms((), "anything") == 0


def test_search_document_is_space_separated_stems() -> None:
    assert search_document("I'm allergic to Peanuts!") == "i m allergic to peanut"
    assert search_document("...") == ""


# --- a real FTS5 table ------------------------------------------------------------------


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_break_fts5(query: str) -> None:
    db = fts5_table(DOCS)
    assert fts5_hits(db, query) == python_hits(DOCS, query)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("peanut allergies", {1, 2}),
        ("liking sushi", {0}),
        ("run", {7}),
        ("recipe", {3}),
        ("cafe creme", {9}),
        ("example", {10}),
        ("rma 1234", {4}),
        ("日本語を勉強しています", {8}),
        ("hike", {6}),
        ("3", {11}),
    ],
)
def test_fts5_finds_inflected_and_unicode_forms(query: str, expected: set[int]) -> None:
    db = fts5_table(DOCS)
    assert fts5_hits(db, query) == expected
    assert python_hits(DOCS, query) == expected


words = st.sampled_from(
    [
        "like",
        "likes",
        "liked",
        "liking",
        "sushi",
        "peanut",
        "peanuts",
        "allergy",
        "allergies",
        "run",
        "running",
        "café",
        "cafe",
        "NEAR",
        "OR",
        "AND",
        "NOT",
        '"',
        "*",
        ":",
        "(",
        ")",
        "-",
        "^",
        "'",
        "\\",
        "日本",
        "ß",
        "ǅ",
        "x_y",
    ]
)
free_text = st.text(min_size=0, max_size=40)
phrase = st.lists(st.one_of(words, free_text), max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(phrase, min_size=1, max_size=8), query=phrase)
def test_fts5_matches_exactly_what_python_counts(documents: list[str], query: str) -> None:
    db = fts5_table(documents)
    assert fts5_hits(db, query) == python_hits(documents, query)


@settings(max_examples=300, deadline=None)
@given(query=st.one_of(phrase, st.text()))
def test_pg_tsquery_text_is_only_quoted_alphanumeric_lexemes(query: str) -> None:
    text = pg_tsquery_text(query)
    if text is None:
        assert query_terms(query) == ()
        return
    lexemes = text.split(" | ")
    assert lexemes == [f"'{t}'" for t in query_terms(query)]
    for lexeme in lexemes:
        inner = lexeme[1:-1]
        assert inner and all(ch.isalnum() for ch in inner)


# --- PostgreSQL, the same fixture ------------------------------------------------------------


@pytest.fixture(scope="module")
def pg_connection() -> Iterator[object]:
    psycopg = pytest.importorskip("psycopg")
    from tests.support.pgcluster import ThrowawayPostgres

    with ThrowawayPostgres() as pg:
        url = pg.url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url, autocommit=True) as conn:
            yield conn


@pytest.mark.postgres
def test_postgres_tsvector_matches_exactly_what_fts5_matches(pg_connection: object) -> None:
    conn = pg_connection
    cur = conn.cursor()  # type: ignore[attr-defined]
    cur.execute("CREATE TEMP TABLE m (id int, search_document text, tsv tsvector)")
    for i, doc in enumerate(DOCS):
        cur.execute(
            "INSERT INTO m VALUES (%s, %s, array_to_tsvector(string_to_array(%s, ' ')))",
            (i, search_document(doc), search_document(doc)),
        )
    db = fts5_table(DOCS)
    queries = [*HOSTILE_QUERIES, "peanut allergies", "liking sushi", "cafe creme", "rma 1234"]
    for query in queries:
        text = pg_tsquery_text(query)
        found: set[int] = set()
        if text is not None:
            cur.execute("SELECT id FROM m WHERE tsv @@ CAST(%s AS tsquery)", (text,))
            found = {row[0] for row in cur.fetchall()}
        assert found == fts5_hits(db, query), query
