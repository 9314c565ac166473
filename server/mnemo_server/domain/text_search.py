"""Text normalization shared by both full-text backends and by ranking.

Why this module does the linguistic work itself: SQLite FTS5's ``porter``
tokenizer and PostgreSQL's ``english`` configuration tokenize and stem
differently (Porter vs Snowball stems, URLs and e-mail addresses kept whole by
PostgreSQL's parser, stop words dropped only by PostgreSQL, diacritics folded
only by SQLite). Fed raw text, the two backends would match different entries
for the same query. So Mnemo normalizes in Python, once, and gives both
backends the same already-normalized terms to index and to look up, with
configurations that do no further linguistics (``store.memories.text_index``
says how each backend indexes them).

Normalization: NFKC, case folding, Latin diacritics removed (``café`` ->
``cafe``), tokens are runs of Unicode letters and digits (Python ``\\w`` less
``_``; combining marks of other scripts split tokens, identically on both
sides), tokens longer than ``MAX_TOKEN_CHARS`` are dropped. Each token is then
stemmed with the Snowball English stemmer (PyStemmer, the C implementation of
https://snowballstem.org/algorithms/english/stemmer.html): ``like``,
``likes``, ``liked`` and ``liking`` all become ``like``; ``happiness`` and
``happy`` ``happi``; ``vacations`` ``vacat``. Irregular forms (``ran``) keep
their own stem. Stems are an internal form, never shown to anyone.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

MAX_TOKEN_CHARS = 64
"""Longer tokens (hashes, base64 blobs) are not indexed or searched for."""

MAX_QUERY_TERMS = 64
"""A query (possibly a whole outbound message) searches its first 64 terms."""

_TOKEN = re.compile(r"[^\W_]+")

# English function words, never searched for unless a query has nothing else.
# Contraction fragments are here because tokens split at apostrophes.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does
    doesn doing don down during each few for from further had hadn has hasn have haven
    having he her here hers herself him himself his how i if in into is isn it its itself
    just ll m me more most my myself no nor not now of off on once only or other ought our
    ours ourselves out over own re s same shan she should shouldn so some such t than that
    the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will
    with won would wouldn you your yours yourself yourselves
    """.split()
)


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    """``é`` -> ``e``: strip combining marks when what remains is ASCII."""
    decomposed = unicodedata.normalize("NFD", ch)
    base = "".join(c for c in decomposed if not unicodedata.combining(c))
    return base if base.isascii() and base else ch


def _normalize(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    return "".join(_fold_char(ch) if not ch.isascii() else ch for ch in folded)


def tokens(text: str) -> list[str]:
    """The normalized words of ``text``, in order, unstemmed."""
    return [t for t in _TOKEN.findall(_normalize(text)) if len(t) <= MAX_TOKEN_CHARS]


_PLURAL_ENDINGS = ("sses", "ches", "shes", "xes", "zzes")


def singular(word: str) -> str:
    """A plural made singular (``foods`` -> ``food``, ``allergies`` ->
    ``allergy``), for keys people read; words of 3 letters or fewer and
    words that are not plain ASCII letters are returned unchanged. Not a
    stem: ``liked`` stays ``liked``."""
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(_PLURAL_ENDINGS):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_stemmers = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # A PyStemmer object is not thread-safe: one per thread.
    found: Stemmer.Stemmer | None = getattr(_stemmers, "english", None)
    if found is None:
        found = _stemmers.english = Stemmer.Stemmer("english")
    return found


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one normalized token (see the module
    docstring). Tokens that are not English words (digits, other scripts)
    come back unchanged or nearly so, identically on every call."""
    return str(_stemmer().stemWord(word))


def stems(text: str) -> list[str]:
    """The stems of ``text``'s tokens, in order (repeats kept)."""
    return [stem(t) for t in tokens(text)]


def query_terms(query: str) -> tuple[str, ...]:
    """The distinct stems a query searches for, in order of first appearance.

    Stop words are left out, unless the query has nothing but stop words (then
    they are searched for). At most ``MAX_QUERY_TERMS``. Every term is a
    non-empty run of letters and digits.
    """
    words = tokens(query)
    content = [w for w in words if w not in STOP_WORDS] or words
    return tuple(dict.fromkeys(stem(w) for w in content))[:MAX_QUERY_TERMS]
