"""Text normalization shared by both full-text backends and by ranking.

Why this module does the linguistic work itself: SQLite FTS5's ``porter``
tokenizer and PostgreSQL's ``english`` configuration tokenize and stem
differently (Porter vs Snowball stems, URLs and e-mail addresses kept whole by
PostgreSQL's parser, stop words dropped only by PostgreSQL, diacritics folded
only by SQLite). Fed raw text, the two backends would match different entries
for the same query. So Mnemo normalizes in Python, once, and gives both
backends the same already-normalized tokens to index and to look up, with
configurations that do no further linguistics:

- the store indexes ``search_document(text)``: the entry's stemmed tokens
  joined by single spaces;
- SQLite: an FTS5 table ``USING fts5(search_document, tokenize='ascii')``
  (the ``ascii`` tokenizer splits only on ASCII non-alphanumerics, here the
  spaces, and treats every non-ASCII character as part of a token, so its
  tokens are exactly ours), queried with ``fts5_match_expression(query)``;
- PostgreSQL: a ``tsvector`` built without the parser,
  ``array_to_tsvector(string_to_array(search_document, ' '))`` (GIN-indexed),
  queried with ``CAST(:q AS tsquery)`` where ``:q`` is
  ``pg_tsquery_text(query)`` (a tsquery literal of quoted lexemes: no parser,
  no dictionary, no stop words);
- both backends therefore match exactly the entries that share at least one
  term with the query, which is what ``matched_terms(...) >= 1`` says in
  Python. Ranking (``domain.ranking``) counts matched terms with
  ``matched_terms`` and never looks at bm25 or ts_rank.

Normalization: NFKC, case folding, Latin diacritics removed (``café`` ->
``cafe``), tokens are runs of Unicode letters and digits (Python ``\\w`` less
``_``; combining marks of other scripts split tokens, identically on both
sides), tokens longer than ``MAX_TOKEN_CHARS`` are dropped. English stemming
(``stem``) handles the simple inflections only: plurals (-s, -es, -ies),
-ed, -ied, -ing, doubled consonants (``running`` -> ``run``) and a final
``e`` (``like``/``likes``/``liked``/``liking`` all -> ``lik``). Stems are an
internal form, never shown to anyone.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

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

_UNDOUBLE_EXCEPT = frozenset("lsz")
_VOWELS = frozenset("aeiouy")


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


def _has_vowel(word: str) -> bool:
    return any(ch in _VOWELS for ch in word)


def _strip_plural(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _strip_verb_suffix(word: str) -> str:
    # -eed words (need, speed, agreed) are left alone: no simple rule tells
    # the verb forms from the roots.
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and not word.endswith("eed"):
            rest = word[: -len(suffix)]
            if len(rest) >= 2 and _has_vowel(rest):
                if len(rest) >= 3 and rest[-1] == rest[-2] and rest[-1] not in _UNDOUBLE_EXCEPT:
                    rest = rest[:-1]
                return rest
    return word


def singular(word: str) -> str:
    """The plural rules of ``stem`` alone (``foods`` -> ``food``), for keys
    people read. Same guards as ``stem``."""
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    return _strip_plural(word)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The stem of one normalized token (see the module docstring).

    Words of 3 letters or fewer, and words that are not plain ASCII letters,
    are returned unchanged.
    """
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    base = _strip_verb_suffix(_strip_plural(word))
    if base.endswith("e") and len(base) >= 3:
        base = base[:-1]
    return base


def search_document(text: str) -> str:
    """What the store indexes for ``text``: its stems joined by single spaces.

    Deterministic; ``""`` when ``text`` has no words. Derived from the entry's
    text, so deleting an entry must delete this too.
    """
    return " ".join(stem(t) for t in tokens(text))


def query_terms(query: str) -> tuple[str, ...]:
    """The distinct stems a query searches for, in order of first appearance.

    Stop words are left out, unless the query has nothing but stop words (then
    they are searched for). At most ``MAX_QUERY_TERMS``. Every term is a
    non-empty run of letters and digits.
    """
    words = tokens(query)
    content = [w for w in words if w not in STOP_WORDS] or words
    return tuple(dict.fromkeys(stem(w) for w in content))[:MAX_QUERY_TERMS]


def fts5_match_expression(query: str) -> str | None:
    """An FTS5 ``MATCH`` expression finding entries with any term of ``query``.

    ``"term1" OR "term2" ...``: every term is a double-quoted string (a quote
    inside would be doubled), so no input can reach FTS5's operators (``AND``,
    ``NOT``, ``NEAR``, ``*``, ``^``, column filters, parentheses). ``None``
    when the query has no terms: the store must then match nothing (and must
    not run ``MATCH ''``, which is a syntax error).
    """
    terms = query_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def pg_tsquery_terms(query: str) -> list[str]:
    """The lexemes a PostgreSQL tsquery for ``query`` ORs together."""
    return list(query_terms(query))


def pg_tsquery_text(query: str) -> str | None:
    """A tsquery literal (``'term1' | 'term2'``) for ``CAST(:q AS tsquery)``.

    Pass it as a bound parameter, never spliced into SQL. Lexemes are quoted
    (quotes and backslashes escaped), so no input can reach tsquery's
    operators. Do not pass it to ``to_tsquery``, which would re-parse and stem
    it. ``None`` when the query has no terms.
    """
    terms = pg_tsquery_terms(query)
    if not terms:
        return None
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def document_terms(text: str) -> frozenset[str]:
    """The set of stems of ``text`` (what its search document contains)."""
    return frozenset(search_document(text).split())


def matched_terms(terms: Iterable[str], text: str) -> int:
    """How many distinct ``terms`` (from ``query_terms``) occur in ``text``.

    The SQL equivalent on the indexed column, identical on both backends, is
    the sum over terms of ``instr(' ' || search_document || ' ', ' ' || :term
    || ' ') > 0`` (``strpos`` on PostgreSQL).
    """
    present = document_terms(text)
    return sum(1 for t in dict.fromkeys(terms) if t in present)
