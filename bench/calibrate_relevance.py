"""``make calibrate-relevance``: fit the relevance calibrations of
``mnemo_server.domain.relevance`` on public data, and show what each
minimum relevance would keep and refuse.

Data: RealMem and REALTALK (``bench.public_sets``; never LoCoMo), and the
off-topic questions (``bench/data/off_topic_questions.json``). Per set and
conversation, the turns are embedded once with the default model (cached in
``<cache>/vectors``), then every question is scored over the turns saved
before it, as the server scores it (``domain.ranking``): the query's terms
(``text_search.query_terms``) against each turn's stems, weighted by the
turns' inverse document frequencies (``ranking.TermStats``), the lexical
share, the cosine to the query's vector (``embedding.query_vectors``), and
the fused score ``w x share + (1 - w) x cosine``. Each off-topic question
is asked of every conversation's whole haystack.

The hit calibration: a class-balanced logistic regression of two features,
the fused score (for ``FUSED_DEFAULT_MODEL``; the lexical share for
``LEXICAL``) and the log of how many entries the store held, with positives
the evidence turns among each question's first ten hits (the question asked
of the conversation so far) and negatives the first ten hits of every
off-topic question (lexical: those that share a term with it), each asked
of stores of 10, 30, 100 and 300 entries (the conversation's first turns)
and of the whole conversation: the best of more unrelated entries scores
higher, so the same fused score means less in a larger store. Balanced, so
that relevance 0.5 is where a hit is as likely to be one as the other.

The query gate (``relevance.QueryGate``): a logistic regression, per
question, of its best hit's fused score, its field (the mean and spread of
its cosines to every turn of the store) and the log of the store's size,
with positives the questions (asked of the conversation so far and of the
10 and 30 turns around their first evidence turn: small stores) and
negatives the off-topic questions at every store size, each set's two
classes weighing the same. Newton's method, no dependency.

    python bench/calibrate_relevance.py [--data DIR[:DIR...]] [--sets realmem,realmem-facts,realtalk]
        [--lexical-weights 0.3] [--limit-conversations N]

The constants of ``domain.relevance`` are the run of the defaults on
2026-12-07: docs/relevance.md records it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.public_sets import (  # noqa: E402
    Ask,
    Save,
    data_directories,
    find_set,
    load,
    off_topic_questions,
    turn_vectors,
)
from mnemo_server.domain.embedding import Embedder, query_vectors  # noqa: E402
from mnemo_server.domain.ranking import SIMILARITY_DIGITS, TermStats  # noqa: E402
from mnemo_server.domain.relevance import (  # noqa: E402
    DEFAULT_MIN_RELEVANCE,
    Calibration,
    QueryField,
    QueryGate,
)
from mnemo_server.domain.text_search import query_terms, stems  # noqa: E402
from mnemo_server.embedders import load_embedder  # noqa: E402

TOP = 10
OFF = "off-topic"
OFF_TOPIC_SIZES = (10, 30, 100, 300)
"""Besides its whole conversation, each off-topic question is asked of the
first turns of it, so that the calibration sees small stores too."""
SMALL_STORES = (10, 30)
"""For the gate, each question is also asked of a store of this many turns
around its first evidence turn, so that the fit sees answers in small
stores as well as off-topic questions in them."""
GATE_MINIMA = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3)
Floats = npt.NDArray[np.float64]


@dataclass
class Haystack:
    """One conversation's turns: their vectors and stems."""

    ids: list[str]
    vectors: npt.NDArray[np.float32]
    stems: list[frozenset[str]]

    def signals(
        self, turns: slice, text: str, vector: npt.NDArray[np.float32]
    ) -> tuple[Floats, Floats, bool]:
        """Over the ``turns`` (a store of them alone): each turn's lexical share and
        cosine for the query ``text``, and whether it has query terms (the
        turns are one conversation's, in save order: a turn's neighbours
        are the turns beside it)."""
        terms = list(dict.fromkeys(query_terms(text)))
        frequencies: Counter[str] = Counter()
        count = len(self.stems[turns])
        for turn in self.stems[turns]:
            frequencies.update(t for t in turn if t in terms)
        stats = TermStats(count, dict(frequencies))
        weights = {t: stats.weight(t) for t in terms}
        total = sum(weights.values())
        shares = np.zeros(count)
        if total:
            for i, turn in enumerate(self.stems[turns]):
                matched = [weights[t] for t in terms if t in turn]
                if matched:
                    shares[i] = sum(matched) / total
        cosines = np.round(self.vectors[turns].astype(np.float64) @ vector, SIMILARITY_DIGITS)
        return shares, cosines, bool(terms)


@dataclass
class Scored:
    """One question's first ``TOP`` hits by a fused score: their lexical
    shares, cosines, and whether each is evidence (all ``False`` for an
    off-topic question); ``evidence``: how many evidence turns it has;
    ``entries``: how many turns were saved when it was asked."""

    set_name: str
    category: str
    fused: Floats
    mean: float
    spread: float
    """The query's field: its cosines' mean and standard deviation over
    every turn saved (``relevance.QueryField``)."""
    hits: npt.NDArray[np.bool_]
    evidence: int
    entries: int
    window: bool = False
    """Asked of a small store around its evidence (``SMALL_STORES``): in
    the gate's fit only."""


def collect(
    embedder: Embedder,
    sets: Sequence[str],
    data: Sequence[Path],
    cache: Path,
    limit: int | None,
) -> tuple[list[tuple[str, Haystack, list[tuple[Ask, int]]]], list[str]]:
    """Every conversation of ``sets``: its haystack and its questions (each
    with how many turns were saved before it)."""
    conversations = []
    for name in sets:
        for number, conversation in enumerate(load(name, find_set(name, data))[:limit]):
            saves = [e for e in conversation.events if isinstance(e, Save)]
            vectors = turn_vectors(embedder, cache, f"{name}-{number}", saves)
            haystack = Haystack(
                [s.turn_id for s in saves], vectors, [frozenset(stems(s.text)) for s in saves]
            )
            asks, saved = [], 0
            for event in conversation.events:
                if isinstance(event, Save):
                    saved += 1
                else:
                    asks.append((event, saved))
            conversations.append((name, haystack, asks))
            print(f"{name} {number}: {len(saves)} turns, {len(asks)} questions", flush=True)
    return conversations, [q.text for q in off_topic_questions()]


def score_all(
    embedder: Embedder,
    conversations: list[tuple[str, Haystack, list[tuple[Ask, int]]]],
    off_topic: Sequence[str],
    lexical_weight: float,
) -> list[Scored]:
    """Each question's first hits by ``lexical_weight`` x share + the rest
    x cosine (lexical recall: ``lexical_weight`` 1, only turns sharing a
    term)."""
    texts = sorted({a.text for _, _, asks in conversations for a, _ in asks} | set(off_topic))
    vectors = dict(zip(texts, np.asarray(query_vectors(embedder, texts)), strict=True))
    scored: list[Scored] = []

    def first(
        name: str,
        category: str,
        haystack: Haystack,
        turns: slice,
        text: str,
        evidence: frozenset[str],
        window: bool = False,
    ) -> None:
        shares, cosines, has_terms = haystack.signals(turns, text, vectors[text])
        count = len(shares)
        fused = (
            cosines if not has_terms else lexical_weight * shares + (1 - lexical_weight) * cosines
        )
        order_by = fused
        if lexical_weight == 1.0:
            order_by = np.where(shares > 0, shares, -1.0)  # lexical: only turns sharing a term
        order = np.argsort(-order_by, kind="stable")[:TOP]
        order = order[order_by[order] > -1.0]
        ids = haystack.ids[turns]
        hits = np.array([ids[i] in evidence for i in order], dtype=bool)
        scored.append(
            Scored(
                name,
                category,
                fused[order],
                float(cosines.mean()) if lexical_weight < 1.0 else 0.0,
                float(cosines.std()) if lexical_weight < 1.0 else 0.0,
                hits,
                len(evidence),
                count,
                window,
            )
        )

    for name, haystack, asks in conversations:
        for ask, count in asks:
            first(name, ask.category, haystack, slice(0, count), ask.text, ask.evidence)
            # Small stores too: the question asked of the turns around its evidence.
            where = [i for i in range(count) if haystack.ids[i] in ask.evidence]
            for size in (n for n in SMALL_STORES if n < count and where):
                start = max(0, min(where[0] - size // 2, count - size))
                turns = slice(start, start + size)
                first(name, ask.category, haystack, turns, ask.text, ask.evidence, window=True)
        for size in [*(n for n in OFF_TOPIC_SIZES if n < len(haystack.ids)), len(haystack.ids)]:
            for text in off_topic:
                first(name, OFF, haystack, slice(0, size), text, frozenset())
    return scored


def fit_logistic(
    values: Floats, labels: npt.NDArray[np.bool_], weights: Floats | None = None
) -> Floats:
    """The coefficients (one per column of ``values``, then the intercept)
    of a logistic regression of ``labels`` on ``values`` (Newton's method, a
    tiny L2 penalty), each row weighing ``weights`` (default: class-balanced,
    each class half)."""
    x = np.concatenate([values, np.ones((len(values), 1))], axis=1)
    y = labels.astype(np.float64)
    if weights is None:
        weights = np.where(labels, 0.5 / max(labels.sum(), 1), 0.5 / max((~labels).sum(), 1))
    theta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        gradient = x.T @ (weights * (p - y)) + 1e-6 * theta
        hessian = (x.T * (weights * p * (1 - p))) @ x + 1e-6 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta


def _columns(s: Scored) -> Floats:
    """A hit's features (``Calibration.relevance``): its fused score and the
    log of the store's size."""
    return np.stack([s.fused, np.full(len(s.fused), math.log(max(s.entries, 1)))], axis=1)


def _relevance(s: Scored, theta: Floats) -> Floats:
    """Each hit's relevance as the server computes it (``Calibration``)."""
    slope, size_slope, intercept = (float(c) for c in theta)
    # The hits' fused scores are computed already: the lexical weight is unused.
    calibration = Calibration(
        "fit", lexical_weight=1.0, slope=slope, intercept=intercept, size_slope=size_slope
    )
    relevance = calibration.relevance_of(s.entries)
    return np.array([relevance(float(f)) for f in s.fused])


def features(scored: Sequence[Scored]) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """The hit calibration's values and labels (module doc)."""
    values: list[Floats] = []
    labels: list[bool] = []
    for s in scored:
        if s.window:
            continue
        columns = _columns(s)
        if s.category == OFF:
            values.append(columns)
            labels += [False] * len(columns)
        else:
            values.append(columns[s.hits])
            labels += [True] * int(s.hits.sum())
    return np.concatenate(values), np.asarray(labels)


def _gate_columns(s: Scored) -> list[float]:
    """A question's gate features (``relevance.QueryGate``)."""
    best = float(s.fused[0]) if len(s.fused) else 0.0
    return [best, s.mean, s.spread, math.log(max(s.entries, 1))]


def fit_gate(scored: Sequence[Scored]) -> Floats:
    """The gate's coefficients (module doc): best, mean, spread, size slopes
    and the intercept."""
    values = np.array([_gate_columns(s) for s in scored])
    labels = np.array([s.category != OFF for s in scored])
    weights = np.zeros(len(scored))
    names = np.array([s.set_name for s in scored])
    for name in set(names):
        for label in (True, False):
            mine = (names == name) & (labels == label)
            weights[mine] = 1.0 / max(int(mine.sum()), 1)
    return fit_logistic(values, labels, weights / weights.sum())


def _gate(s: Scored, gate: Floats) -> float:
    """The question's gate likelihood as the server computes it (``QueryGate``)."""
    best_slope, mean_slope, spread_slope, size_slope, intercept = (float(c) for c in gate)
    fitted = QueryGate(best_slope, mean_slope, spread_slope, size_slope, intercept, minimum=0.0)
    best = float(s.fused[0]) if len(s.fused) else 0.0
    return fitted.likelihood(best, QueryField(s.mean, s.spread, s.entries), s.entries)


def table(
    scored: Sequence[Scored], theta: Floats, gate: Floats | None, minimum: float | None = None
) -> list[str]:
    """Per set and minimum relevance (or, given ``minimum``, per gate
    minimum at that relevance): recall@10 of what is kept, the share of
    off-topic questions that keep nothing (asked of the whole store, and of
    its first 30 entries), the mean entries a context of 5 keeps."""
    rows = (
        [(m, 0.0) for m in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)]
        if minimum is None
        else [(minimum, g) for g in GATE_MINIMA]
    )
    lines = [
        f"| set | {'minimum' if minimum is None else 'gate minimum'} | recall@10 kept "
        "| off-topic: nothing | off-topic, 30 entries: nothing | context entries |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in sorted({s.set_name for s in scored}):
        mine = [s for s in scored if s.set_name == name]
        whole = max(s.entries for s in mine if s.category == OFF)
        gates = [1.0 if gate is None else _gate(s, gate) for s in mine]
        relevance = [_relevance(s, theta) for s in mine]
        for floor, gate_minimum in rows:
            kept, entries = [], []
            nothing: dict[bool, list[bool]] = {True: [], False: []}
            for s, g, r in zip(mine, gates, relevance, strict=True):
                keep = (r >= floor) & (g >= gate_minimum)
                if s.category == OFF:
                    if s.entries in (whole, 30):
                        nothing[s.entries == whole].append(not keep[:5].any())
                elif not s.window:
                    kept.append(s.hits[keep].sum() / s.evidence)
                    entries.append(keep[:5].sum())
            shown = floor if minimum is None else gate_minimum
            lines.append(
                f"| {name} | {shown:.2f} | {np.mean(kept):.3f} "
                f"| {np.mean(nothing[True]):.3f} | {_mean(nothing[False]):.3f} "
                f"| {np.mean(entries):.2f} |"
            )
    return lines


def _mean(values: Sequence[bool]) -> float:
    return float(np.mean(values)) if values else math.nan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MNEMO_BENCH_DATA", ""))
    parser.add_argument("--sets", default="realmem,realmem-facts,realtalk")
    parser.add_argument("--lexical-weights", default="0.3")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "mnemo-bench")
    args = parser.parse_args(argv)
    data = data_directories(args.data)
    embedder = load_embedder("local", threads=max(1, os.cpu_count() or 1))
    assert embedder is not None
    sets = [s for s in args.sets.split(",") if s]
    conversations, off_topic = collect(embedder, sets, data, args.cache, args.limit_conversations)
    report: dict[str, Any] = {"model": embedder.model, "sets": sets}
    for weight in [float(w) for w in args.lexical_weights.split(",")] + [1.0]:
        scored = score_all(embedder, conversations, off_topic, weight)
        slope, size_slope, intercept = (float(c) for c in fit_logistic(*features(scored)))
        theta = np.array([slope, size_slope, intercept])
        recall = {
            name: round(
                float(
                    np.mean(
                        [
                            s.hits.sum() / s.evidence
                            for s in scored
                            if s.set_name == name and s.category != OFF and not s.window
                        ]
                    )
                ),
                3,
            )
            for name in sets
        }
        kind = "lexical" if weight == 1.0 else f"fused, lexical weight {weight}"
        print(
            f"\n{kind}: slope {slope:.2f}, size slope {size_slope:.3f}, intercept "
            f"{intercept:.2f}; recall@10 without a minimum {recall}"
        )
        print("\n".join(table(scored, theta, None)))
        report[kind] = {
            "slope": slope,
            "size_slope": size_slope,
            "intercept": intercept,
            "recall@10": recall,
        }
        if weight == 1.0:
            continue
        gate = fit_gate(scored)
        names = ("best_slope", "mean_slope", "spread_slope", "size_slope", "intercept")
        fitted = {n: round(float(c), 3) for n, c in zip(names, gate, strict=True)}
        print(f"\n{kind}, the query gate: {fitted}; at relevance {DEFAULT_MIN_RELEVANCE}:")
        print("\n".join(table(scored, theta, gate, DEFAULT_MIN_RELEVANCE)))
        report[kind]["gate"] = fitted
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
