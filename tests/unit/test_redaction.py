"""``domain.redaction``: credentials out of text that may be logged."""

from __future__ import annotations

import pytest

from mnemo_server.domain.redaction import REDACTED, redact

KEY = "sk-live-Q9xT2mWv8rLpZk4NbYc7HdJf"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Incorrect API key provided: Bearer {KEY}. See your account.", "Incorrect API key"),
        (f"{{'Authorization': 'Bearer {KEY}'}}", "Authorization"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA== then", "then"),
        ('{"api_key": "abc123456789", "model": "bge"}', '"model": "bge"'),
        ("https://example.com/v1?token=abcdef123&x=1", "x=1"),
        ("password: hunter2hunter2", "password"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl end", "end"),
        (f"the key {KEY} leaked", "leaked"),
    ],
)
def test_credentials_are_replaced_and_the_rest_kept(text: str, kept: str) -> None:
    clean = redact(text)
    assert REDACTED in clean and kept in clean
    for secret in (KEY, "dXNlcjpwYXNzd29yZA", "abc123456789", "abcdef123", "hunter2", "c2lnbmF0"):
        assert secret not in clean, clean


def test_a_known_secret_of_any_shape_is_replaced() -> None:
    assert redact("the key is plainwords42", ["plainwords42"]) == f"the key is {REDACTED}"
    assert redact("short", ["ab"]) == "short"  # too short to be a secret worth hiding


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "the embedder fails on every text; retrying in 2 s",
        "http://127.0.0.1:8080 answered 503: down",
        "a token of appreciation",
        "the secret garden",
    ):
        assert redact(text) == text
