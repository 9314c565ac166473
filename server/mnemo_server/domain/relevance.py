"""What a recall hit's ``score`` means: its **relevance**, the calibrated
likelihood that the entry is about the query, in (0, 1), with one documented
threshold (``DEFAULT_MIN_RELEVANCE``, 0.5) between "about this" and "not
about this" (docs/relevance.md, "Relevance and judgement").

A hit's relevance is a logistic function of the two signals ranking already
weighs (``domain.ranking``), the entry's lexical share of the query's term
weight (0..1) and its cosine to the query vector, fused as
``w x share + (1 - w) x cosine``, and of how many live entries the user has
(``n``):

    relevance = 1 / (1 + exp(-(slope x fused + size_slope x ln(n) + intercept)))

The store's size counts because the best of more unrelated entries scores
higher: in a store of 10,000 turns some turn is close to any question, so
the same fused score says less there than among ten facts (``size_slope`` is
negative). Otherwise it depends on that entry and that query only: never on
the other hits or a min-max of the list. It is monotonic in the fused score,
so hits in rank order are in relevance order. The coefficients are fitted on
public data (``bench/calibrate_relevance.py``: RealMem's turns and its
extracted facts, REALTALK; never LoCoMo) as a class-balanced logistic
regression of "this hit is an evidence turn of its question" against the
hits that questions no memory answers (``bench/data/
off_topic_questions.json``, asked of stores of 10 entries to whole
conversations) bring up, so a relevance of 0.5 is the point where a hit is
as likely to answer its question as to have been found for an unrelated one.

An entry with no vector of the query's model (saved a moment ago and not
embedded yet, or refused by the embedder) is judged by ``LEXICAL``, by its
words, whatever the query's calibration (``domain.ranking``): a cosine of 0
would say it is about nothing.

A calibration holds for one embedding model (cosines of different models are
on different scales): ``calibration(model)`` has one for the default model
and one for lexical recall (no vector; no default minimum, see ``LEXICAL``).
A recall that compares vectors of another model is *uncalibrated*: its
relevance is the fused score itself (0.5 x share + 0.5 x cosine, as before
calibration existed) and no minimum applies unless the request or the
server names one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mnemo_server.domain.memory_models import Embedding, RecallQuery

__all__ = [
    "DEFAULT_MIN_RELEVANCE",
    "LEXICAL",
    "UNCALIBRATED",
    "Calibration",
    "calibration",
    "calibration_of",
]

DEFAULT_MIN_RELEVANCE = 0.5
"""Hits of a calibrated recall below this relevance are not returned or
injected unless the request (``min_score``) or the server
(``--min-relevance``) says otherwise."""


@dataclass(frozen=True)
class Calibration:
    """How one kind of recall turns its signals into relevance (module doc).
    ``slope`` ``None``: uncalibrated (the fused score is the relevance)."""

    name: str
    lexical_weight: float
    slope: float | None
    intercept: float = 0.0
    size_slope: float = 0.0
    default_min: float = DEFAULT_MIN_RELEVANCE

    def fused(self, share: float | None, similarity: float | None) -> float:
        """The linear fused score: ``lexical_weight`` x share + the rest x
        cosine (a missing cosine counts 0); a query without terms (``share``
        ``None``: nothing lexical to weigh) is its cosine alone."""
        cosine = 0.0 if similarity is None else similarity
        if share is None:
            return cosine
        return self.lexical_weight * share + (1.0 - self.lexical_weight) * cosine

    def relevance(self, share: float | None, similarity: float | None, entries: int) -> float:
        """The hit's relevance (module doc), in [0, 1], in a store of
        ``entries`` live entries."""
        fused = self.fused(share, similarity)
        if self.slope is None:
            return max(0.0, min(1.0, fused))
        size = self.size_slope * math.log(max(entries, 1))
        return 1.0 / (1.0 + math.exp(-(self.slope * fused + size + self.intercept)))


# The constants below are printed by `make calibrate-relevance`
# (bench/calibrate_relevance.py); docs/relevance.md records the run.

DEFAULT_MODEL = "bge-small-en-v1.5-int8-6c9c6101a956"
"""The default embedder's model (``embedders.packaged``): the name vectors of
it are stored under."""

FUSED_DEFAULT_MODEL = Calibration(
    "bge-small-en-v1.5-int8",
    lexical_weight=0.3,
    slope=43.15,
    size_slope=-0.673,
    intercept=-15.67,
)
"""Fused recall with the default model."""

LEXICAL = Calibration(
    "lexical",
    lexical_weight=1.0,
    slope=2.45,
    size_slope=-0.026,
    intercept=-0.57,
    default_min=0.0,
)
"""Lexical recall (``semantic: false``, or a server without an embedder).
Calibrated, but with no default minimum: the lexical share alone tells
little of what is about a query (docs/relevance.md: at 0.5, REALTALK keeps
88% of its recall@10 and RealMem's facts 18%), and a lexical hit shares at
least one of the query's words already."""

UNCALIBRATED = Calibration("uncalibrated", lexical_weight=0.5, slope=None, default_min=0.0)
"""Fused recall with vectors of any other model (module doc)."""

_BY_MODEL = {DEFAULT_MODEL: FUSED_DEFAULT_MODEL}


def calibration_of(query: RecallQuery, embedding: Embedding | None) -> Calibration:
    """The calibration of ``query`` recalled with ``embedding`` (its query
    vector, if any): lexical unless the query is semantic and has one."""
    return calibration(embedding.model if query.semantic and embedding is not None else None)


def calibration(model: str | None) -> Calibration:
    """The calibration of a recall that compares vectors of ``model``
    (``None``: lexical recall)."""
    if model is None:
        return LEXICAL
    return _BY_MODEL.get(model, UNCALIBRATED)
