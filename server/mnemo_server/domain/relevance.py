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

**The query gate.** Per hit, relevance cannot tell a question about the
user from one about nothing they saved when the best of many unrelated
entries happens to be close ("what is the capital of Peru?" among 5,000
chat turns). A judging recall (a minimum relevance applies) therefore
also asks its calibration's ``QueryGate`` first: a logistic function of the
query's best fused score, its *field* (``QueryField``: the mean and spread of
its cosines to all of the user's entries searched; a general-knowledge
question is about equally far from all of them, a question about the user
is near their entries as a whole and much nearer a few) and the store's
size, fitted on questions with answers (in whole conversations and in 10
and 30 turns around their evidence: small stores) against the off-topic
questions. Below the gate's minimum the recall returns nothing. The gate
says nothing about which hits are relevant: that is each hit's relevance.

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
from collections.abc import Callable
from dataclasses import dataclass

from mnemo_server.domain.memory_models import Embedding, RecallQuery

__all__ = [
    "DEFAULT_MIN_RELEVANCE",
    "LEXICAL",
    "NO_FIELD",
    "UNCALIBRATED",
    "Calibration",
    "QueryField",
    "QueryGate",
    "calibration",
    "calibration_of",
]

DEFAULT_MIN_RELEVANCE = 0.5
"""Hits of a calibrated recall below this relevance are not returned or
injected unless the request (``min_score``) or the server
(``--min-relevance``) says otherwise."""


@dataclass(frozen=True)
class QueryField:
    """How close the query vector is to the user's entries as a whole: the
    ``mean`` and standard deviation (``spread``) of its cosines to every
    entry searched. ``searched``: how many (0: none, and no field)."""

    mean: float = 0.0
    spread: float = 0.0
    searched: int = 0


NO_FIELD = QueryField()


@dataclass(frozen=True)
class QueryGate:
    """Whether a query is about anything the user saved at all (module doc):
    a logistic function of its best hit's fused score, its field and the
    store's size, fitted on questions with answers against questions no
    memory answers. Below ``minimum`` the query is judged to be about
    nothing saved and a judging recall returns nothing."""

    best_slope: float
    mean_slope: float
    spread_slope: float
    size_slope: float
    intercept: float
    minimum: float

    def likelihood(self, best: float, field: QueryField, entries: int) -> float:
        """In (0, 1): how likely the query has an answer among the entries
        (``best``: its best hit's fused score)."""
        signal = (
            self.best_slope * best
            + self.mean_slope * field.mean
            + self.spread_slope * field.spread
            + self.size_slope * math.log(max(entries, 1))
            + self.intercept
        )
        return 1.0 / (1.0 + math.exp(-max(-700.0, min(700.0, signal))))

    def admits(self, best: float, field: QueryField, entries: int) -> bool:
        """Whether the query passes; always when nothing was searched (no
        field to judge by)."""
        return field.searched == 0 or self.likelihood(best, field, entries) >= self.minimum


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
    gate: QueryGate | None = None
    """The query gate of a judging recall (``None``: none)."""

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
        return self.relevance_of(entries)(self.fused(share, similarity))

    def relevance_of(self, entries: int) -> Callable[[float], float]:
        """The relevance of a fused score (``fused``) in a store of
        ``entries`` live entries: ``relevance`` with the store's term
        computed once, for the many hits of one recall (the same floats)."""
        if self.slope is None:
            return _clipped
        slope, intercept = self.slope, self.intercept
        size = self.size_slope * math.log(max(entries, 1))
        exp = math.exp

        def logistic(fused: float) -> float:
            return 1.0 / (1.0 + exp(-(slope * fused + size + intercept)))

        return logistic


def _clipped(fused: float) -> float:
    return max(0.0, min(1.0, fused))


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
    gate=QueryGate(
        best_slope=11.12,
        mean_slope=39.59,
        spread_slope=91.76,
        size_slope=-0.439,
        intercept=-26.86,
        minimum=0.1,
    ),
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
