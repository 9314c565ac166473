"""What a recall hit's ``score`` means: its **relevance**, the calibrated
likelihood that the entry is about the query, in (0, 1), with one documented
threshold (``DEFAULT_MIN_RELEVANCE``, 0.5) between "about this" and "not
about this" (docs/relevance.md, "Relevance and judgement").

A hit's relevance is a logistic function of the two signals ranking already
weighs (``domain.ranking``), the entry's lexical share of the query's term
weight (0..1) and its cosine to the query vector, fused as
``fused = w x share + (1 - w) x cosine``; of the entry's *context*, the best
fused score of its neighbours (the entries saved just before and after it in
its conversation: a question is often answered by the turn next to the one
that matches it); of how many live entries the user has (``n``); and of the
query's *field* (``QueryField``), the mean and spread of its cosines to all
of the user's entries searched:

    signal = slope x (fused + context_weight x context) + size_slope x ln(n)
             + mean_slope x mean + spread_slope x spread + intercept
    relevance = 1 / (1 + exp(-signal))

The field is what tells a question about the user's life from one about
nothing they saved: a general-knowledge question is about equally far from
every entry (a low mean, a small spread), while a question about the user is
near their entries as a whole and much nearer a few of them. It is a
property of the query and the whole store, never of the other hits or a
min-max of the list, and the same for every hit of one query, so hits in
rank order are in relevance order. The coefficients are fitted on public
data (``bench/calibrate_relevance.py``: RealMem's turns and its extracted
facts, REALTALK; never LoCoMo) as a class-balanced logistic regression of
"this hit is an evidence turn of its question" (asked of the whole
conversation and of 10 and 30 turns around its evidence) against the hits
that questions no memory answers (``bench/data/off_topic_questions.json``,
asked of stores of 10 entries to whole conversations) bring up. The
intercept is then shifted so that relevance 0.5 is the fit's 0.3: the point
where RealMem's facts and REALTALK refuse at least 90% of the off-topic
questions with the least recall lost (docs/relevance.md has the table).

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
    "NO_FIELD",
    "UNCALIBRATED",
    "Calibration",
    "QueryField",
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
    entry searched (module doc). Zero when nothing was searched."""

    mean: float = 0.0
    spread: float = 0.0


NO_FIELD = QueryField()


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
    context_weight: float = 0.0
    """How much of the best fused score of the entry's neighbours (the
    entries saved just before and after it) adds to its own."""
    mean_slope: float = 0.0
    spread_slope: float = 0.0

    def fused(self, share: float | None, similarity: float | None) -> float:
        """The linear fused score: ``lexical_weight`` x share + the rest x
        cosine (a missing cosine counts 0); a query without terms (``share``
        ``None``: nothing lexical to weigh) is its cosine alone."""
        cosine = 0.0 if similarity is None else similarity
        if share is None:
            return cosine
        return self.lexical_weight * share + (1.0 - self.lexical_weight) * cosine

    def relevance(
        self,
        share: float | None,
        similarity: float | None,
        entries: int,
        *,
        context: float = 0.0,
        field: QueryField = NO_FIELD,
    ) -> float:
        """The hit's relevance (module doc), in [0, 1], in a store of
        ``entries`` live entries; ``context``: the best fused score of its
        neighbours (0 without any), ``field``: the query's."""
        fused = self.fused(share, similarity)
        if self.slope is None:
            return max(0.0, min(1.0, fused))
        signal = (
            self.slope * (fused + self.context_weight * max(context, 0.0))
            + self.size_slope * math.log(max(entries, 1))
            + self.mean_slope * field.mean
            + self.spread_slope * field.spread
            + self.intercept
        )
        return 1.0 / (1.0 + math.exp(-signal))


# The constants below are printed by `make calibrate-relevance`
# (bench/calibrate_relevance.py); docs/relevance.md records the run.

DEFAULT_MODEL = "bge-small-en-v1.5-int8-6c9c6101a956"
"""The default embedder's model (``embedders.packaged``): the name vectors of
it are stored under."""

FUSED_DEFAULT_MODEL = Calibration(
    "bge-small-en-v1.5-int8",
    lexical_weight=0.3,
    slope=17.02,
    size_slope=-0.870,
    intercept=-25.66,
    context_weight=0.3,
    mean_slope=35.50,
    spread_slope=79.61,
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
