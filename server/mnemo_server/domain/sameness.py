"""When two memory texts state the same fact (issue 26: never keep the same
fact twice).

Exact sameness is decided on a *normalised* text: Unicode NFKC, case folded,
every run of whitespace one space, no leading or trailing whitespace, and no
trailing sentence punctuation (``.``, ``!``, ``?``, ``;``, ``:``, ``,``). So
``"Ada is vegan."``, ``"ada is vegan"`` and ``"Ada  is VEGAN!"`` are the same
fact; ``"Ada is not vegan."`` and ``"Ada is vegan, mostly."`` are not: the
normalisation never drops a word. The store keeps each entry's
``fingerprint`` (a 128-bit BLAKE2b of the normalised text) in an index, so
finding a live entry with the same text is one index lookup, never a scan.

Near-duplicates (the same fact in other words) are found by embedding
similarity instead (``NEAR_DUPLICATE_THRESHOLD``; see ``docs/relevance.md``
for its measured precision and recall).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")
_TRAILING = ".!?;:,"

NEAR_DUPLICATE_THRESHOLD = 0.96
"""The default cosine (of the server's embedder) at or above which the
near-duplicate check calls two texts the same fact: the most precise
threshold on the labelled pairs of ``bench/data/near_duplicate_pairs.jsonl``
with the default model (precision 0.81, recall 0.40; ``docs/relevance.md``).
That precision is why the check is off unless a server or a request asks."""

FINGERPRINT_CHARS = 32
"""The length of a fingerprint (hex digits)."""


def normalise(text: str) -> str:
    """``text`` as exact sameness compares it (see the module doc)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", folded).strip().rstrip(_TRAILING).rstrip()


def fingerprint(text: str) -> str:
    """The hex BLAKE2b-128 of ``normalise(text)``."""
    return hashlib.blake2b(normalise(text).encode(), digest_size=16).hexdigest()
