"""Data shapes shared by the Mnemo cells and the peer drivers (plain Python:
the peers' environment has no Mnemo packages).

- ``message(author, index)``: the one message of an append (a user turn, as
  an agent SDK stores it: ``{"role": "user", "content": ...}``).
- ``texts(seed)``: the memory texts (``tests.support.memory_corpus``).
- The sizes of the data set: every data user has ``MEMORIES`` memories and a
  history of ``MESSAGES`` messages; reads take pages of ``PAGE``.
"""

from __future__ import annotations

from typing import Any

from tests.support.memory_corpus import Corpus

MEMORIES = 1000
MESSAGES = 1000
PAGE = 50
DATA_USERS = 16
KINDS = ("preference", "fact", "plan", "contact")


def message(author: int, index: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {index} from worker {author}: what is next?"}


def corpus(seed: int) -> Corpus:
    """The memory texts of data user ``seed`` (and of the writers, seeded by worker)."""
    return Corpus(seed=seed)


def memory_id(index: int) -> str:
    return f"m{index:06}"


def data_user(index: int) -> str:
    return f"data-{index}"
