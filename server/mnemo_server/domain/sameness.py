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

A draft is the same fact as a live entry (``is_same``) when their texts
have the same fingerprint and the entry is in the draft's place
(``same_place``): its scope and conversation, and, for a keyed draft, its
key. Near-duplicates (the same fact in other words) are found by embedding
similarity instead (``nearest_same``, ``NEAR_DUPLICATE_THRESHOLD``; see
``docs/relevance.md`` for its measured precision and recall). The rules
here are pure; the store reads the candidates (``store.memories.duplicates``)
and ``domain.validity.plan_saves`` applies the rules to a save call.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemo_server.domain.memory_models import MemoryDraft

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


@dataclass(frozen=True)
class LiveEntry:
    """What sameness compares of a live entry."""

    memory_id: str
    fingerprint: str
    scope: str
    conversation_id: str
    key: str


def same_place(entry: LiveEntry, draft: MemoryDraft) -> bool:
    """``entry`` is where ``draft`` would be a duplicate: its scope and
    conversation, and its key for a keyed draft (a keyed save identical to
    its current entry keeps the current one; it never borrows an entry of
    another key, which would leave its own chain unsaved). An unkeyed draft
    is the same as any live entry of its scope and conversation, keyed or
    not."""
    return (
        entry.scope == draft.scope.value
        and entry.conversation_id == draft.conversation_id
        and (not draft.key or entry.key == draft.key)
    )


def is_same(entry: LiveEntry, draft: MemoryDraft, fingerprint: str) -> bool:
    """``draft`` (whose text has ``fingerprint``) states ``entry``'s fact."""
    return entry.fingerprint == fingerprint and same_place(entry, draft)


def first_same(
    entries: Iterable[LiveEntry], draft: MemoryDraft, fingerprint: str, gone: Set[str]
) -> LiveEntry | None:
    """The first of ``entries`` (not in ``gone``: archived by this call) that
    ``draft`` duplicates, or ``None``."""
    for entry in entries:
        if entry.memory_id not in gone and is_same(entry, draft, fingerprint):
            return entry
    return None


UnitVector = npt.NDArray[np.float64]


def unit_vector(values: Sequence[float]) -> UnitVector | None:
    """``values`` scaled to length 1 (``None`` for a vector that has no
    direction: all zeros, or a value that is not finite). The dot product of
    two of them is their cosine (``domain.vectors.cosine``, the one
    definition of similarity), computed in numpy: the near-duplicate check
    compares a probe with every live vector of the model, and unit vectors
    let it pay each vector's length once, when it is read."""
    vector = np.asarray(values, dtype=np.float64)
    length = float(np.linalg.norm(vector))
    return None if length == 0.0 or not math.isfinite(length) else vector / length


def nearest_same(
    pool: Iterable[tuple[LiveEntry, UnitVector]],
    draft: MemoryDraft,
    query: UnitVector | None,
    threshold: float,
    gone: Set[str],
) -> LiveEntry | None:
    """The entry of ``pool`` (not in ``gone``) of ``draft``'s scope,
    conversation (and key, for a keyed draft) whose vector is nearest to
    ``query`` (the unit vector of the draft's probe) with a cosine
    (``domain.vectors.cosine``, as the dot product of unit vectors) of at
    least ``threshold``, or ``None``. A probe or a vector of no direction,
    or of another length, is near nothing."""
    if query is None:
        return None
    best: tuple[float, LiveEntry] | None = None
    for entry, vector in pool:
        if entry.memory_id in gone or not same_place(entry, draft):
            continue
        if len(vector) != len(query):
            continue
        cosine = float(vector @ query)
        if cosine >= threshold and (best is None or cosine > best[0]):
            best = (cosine, entry)
    return None if best is None else best[1]
