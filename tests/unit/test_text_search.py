"""Normalization and Snowball stemming of texts and queries, and the index
documents built from them (``store.memories.text_index``). What the full-text
engines make of these terms is checked on real SQLite and PostgreSQL in
``tests/store/test_recall.py``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo_server.domain.text_search import (
    MAX_QUERY_TERMS,
    MAX_TOKEN_CHARS,
    query_terms,
    singular,
    stem,
    stems,
    tokens,
)
from mnemo_server.store.memories.text_index import (
    KEY_CHARS,
    document_stems,
    search_document,
    visibility_key,
)

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
        # What the hand-written rules missed: -ness, -ation, -ly.
        ("happy", "happiness"),
        ("vacation", "vacations"),
        ("organize", "organization"),
        ("quick", "quickly"),
        ("generous", "generously"),
    ],
)
def test_english_forms_share_a_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(f) for f in forms}) == 1, {f: stem(f) for f in forms}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("like", "like"),  # not "lik"
        ("cat", "cat"),
        ("bus", "bus"),
        ("this", "this"),
        ("news", "news"),
        ("need", "need"),
        ("speed", "speed"),
        ("1990s", "1990s"),
        ("日本語", "日本語"),
        ("1234", "1234"),
    ],
)
def test_stem_of_short_foreign_and_numeric_words(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stems_keep_order_and_repeats() -> None:
    assert stems("Likes liking LIKED, café") == ["like", "like", "like", "cafe"]
    assert set(stems("Likes liking LIKED, café")) == {"like", "cafe"}


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
    assert query_terms("What foods do I like? I like FOOD!") == ("food", "like")


def test_query_of_only_stop_words_searches_them() -> None:
    assert query_terms("The Who") == ("the", "who")


def test_query_terms_are_capped() -> None:
    many = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS + 10))
    terms = query_terms(many)
    assert len(terms) == MAX_QUERY_TERMS
    assert terms[0] == "word0"


@pytest.mark.parametrize("query", ["", "   ", "!!!", "*", '"', "💥", "_"])
def test_queries_without_words_have_no_terms(query: str) -> None:
    assert query_terms(query) == ()


@settings(max_examples=300, deadline=None)
@given(query=st.text())
def test_query_terms_are_only_letters_and_digits(query: str) -> None:
    """What makes any query safe to hand to FTS5 and tsquery as quoted terms."""
    for term in query_terms(query):
        assert term and all(ch.isalnum() for ch in term), term
        assert " " not in term and '"' not in term and "'" not in term


# --- index documents ------------------------------------------------------------------


def test_search_document_is_key_prefixed_stems() -> None:
    key = visibility_key("alice", "")
    assert len(key) == KEY_CHARS
    document = search_document("alice", "", "I'm allergic to Peanuts!")
    assert document.split() == [key + s for s in ("i", "m", "allerg", "to", "peanut")]
    assert document_stems(document) == ["i", "m", "allerg", "to", "peanut"]
    assert search_document("alice", "", "...") == ""


def test_visibility_keys_separate_users_and_conversations() -> None:
    keys = {
        visibility_key("alice", ""),
        visibility_key("alice", "c1"),
        visibility_key("bob", ""),
        visibility_key("bob", "c1"),
        visibility_key("alice\x1fc1", ""),
    }
    assert len(keys) == 5
    assert all(len(k) == KEY_CHARS and all(c in "0123456789abcdef" for c in k) for k in keys)
    assert visibility_key("alice", "c1") == visibility_key("alice", "c1")
