"""Data shapes shared by the Mnemo cells and the peer drivers (plain Python:
the peers' environment has no Mnemo packages).

- ``message(author, index)``: the one message of an append (a user turn, as
  an agent SDK stores it: ``{"role": "user", "content": ...}``).
- ``texts(seed)``: the memory texts (``tests.support.memory_corpus``).
- The sizes of the data set: every data user has ``MEMORIES`` memories and a
  history of ``MESSAGES`` messages; reads take pages of ``PAGE``.
- The recall cells' user ``RECALL_USER`` has ``RECALL_MEMORIES`` memories;
  their queries are ``sentence_query`` (8-16 words: what inject mode sends)
  and ``short_query`` (2-4 words).
"""

from __future__ import annotations

import random
from typing import Any

from tests.support.memory_corpus import Corpus

MEMORIES = 1000
MESSAGES = 1000
PAGE = 50
DATA_USERS = 16
KINDS = ("preference", "fact", "plan", "contact")
RECALL_USER = "recall-10k"
RECALL_MEMORIES = 10_000
SENTENCE_WORDS = (8, 16)
SHORT_WORDS = (2, 4)


def message(author: int, index: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {index} from worker {author}: what is next?"}


def corpus(seed: int) -> Corpus:
    """The memory texts of data user ``seed`` (and of the writers, seeded by worker)."""
    return Corpus(seed=seed)


def memory_id(index: int) -> str:
    return f"m{index:06}"


def data_user(index: int) -> str:
    return f"data-{index}"


def sentence_query(texts: Corpus, rng: random.Random) -> str:
    """A query of 8-16 words: the corpus's sentences run on and cut (a
    user's turn, as inject mode sends it)."""
    words: list[str] = []
    while len(words) < SENTENCE_WORDS[1]:
        words += texts.sentence().split()
    return " ".join(words[: rng.randint(*SENTENCE_WORDS)])


def short_query(texts: Corpus, rng: random.Random) -> str:
    """A query of 2-4 consecutive words of one of the corpus's sentences."""
    words = texts.sentence().split()
    size = min(len(words), rng.randint(*SHORT_WORDS))
    start = rng.randrange(len(words) - size + 1)
    return " ".join(words[start : start + size])
