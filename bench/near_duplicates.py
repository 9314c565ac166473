"""The near-duplicate check's threshold (issue 26): how well the cosine of
two memories' vectors, from the server's default embedder, tells the same
fact said twice from two different facts.

The set is ``bench/data/near_duplicate_pairs.jsonl``, hand-written pairs of
short facts about users, one JSON object a line: ``{"a", "b", "same",
"kind"}``. ``same`` pairs state one fact in other words (``kind``:
paraphrase, reordered, synonym, first_person, abbreviation, rewording); the
others are different facts that look alike (negation, person_swap,
relation, direction, number, time, date, place, antonym, topic) or nothing
alike (unrelated).

Every text is embedded once with ``--embedder local`` (the vectors a save
stores: ``embed``, not the query form), and a pair is *flagged* when its
cosine is >= the threshold. For each threshold from 0.80 to 0.99 the table
gives precision, recall and F1 of the flags against ``same``, and the false
positives of each kind of different-fact pair. The chosen threshold is the
lowest whose precision is >= 0.95 (``--min-precision``); when none reaches
it, the one with the highest precision, and the output says so. At that
threshold each kind gets its share of flagged pairs: the recall of a
same-fact kind, the false-positive rate of a different-fact kind (a kind
holds one label, so its precision alone says nothing).

    python bench/near_duplicates.py [--min-precision 0.95] [--record]

``--record`` rewrites the section between ``<!-- near-duplicates:start -->``
and ``<!-- near-duplicates:end -->`` of docs/relevance.md (appended under
``## Near-duplicate check`` when missing). The last line printed is
``threshold=0.xx``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from mnemo_server.domain.embedding import Embedder  # noqa: E402
from mnemo_server.embedders import load_embedder  # noqa: E402

DATA = ROOT / "bench" / "data" / "near_duplicate_pairs.jsonl"
DOC = ROOT / "docs" / "relevance.md"
HEADING = "## Near-duplicate check"
START = "<!-- near-duplicates:start -->"
END = "<!-- near-duplicates:end -->"
COMMAND = "make bench-near-duplicates"
THRESHOLDS = tuple(hundredths / 100 for hundredths in range(80, 100))
BATCH = 64


@dataclass(frozen=True)
class Pair:
    """One labelled line of the set, with the cosine of its two texts."""

    a: str
    b: str
    same: bool
    kind: str
    cosine: float = math.nan


@dataclass(frozen=True)
class Row:
    """The flags at one threshold, counted against the labels."""

    threshold: float
    true_positives: int
    false_positives: int
    false_negatives: int
    false_by_kind: dict[str, int]

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else math.nan

    @property
    def recall(self) -> float:
        same = self.true_positives + self.false_negatives
        return self.true_positives / same if same else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else math.nan


def read_pairs(path: Path) -> list[Pair]:
    """The set's pairs, in file order (``tests/unit/test_near_duplicate_pairs.py`` checks its shape)."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(Pair(row["a"], row["b"], bool(row["same"]), row["kind"]))
    return pairs


def score(pairs: Sequence[Pair], embedder: Embedder) -> list[Pair]:
    """``pairs`` with the cosine of their texts' vectors, each text embedded once."""
    texts = sorted({text for pair in pairs for text in (pair.a, pair.b)})
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        for text, vector in zip(chunk, embedder.embed(chunk), strict=True):
            array = np.asarray(vector, dtype=np.float64)
            vectors[text] = array / np.linalg.norm(array)
    return [
        Pair(p.a, p.b, p.same, p.kind, float(np.dot(vectors[p.a], vectors[p.b]))) for p in pairs
    ]


def flagged(pair: Pair, threshold: float) -> bool:
    return pair.cosine >= threshold


def sweep(pairs: Sequence[Pair]) -> list[Row]:
    rows = []
    for threshold in THRESHOLDS:
        false_by_kind = Counter(p.kind for p in pairs if not p.same and flagged(p, threshold))
        rows.append(
            Row(
                threshold,
                true_positives=sum(p.same and flagged(p, threshold) for p in pairs),
                false_positives=sum(false_by_kind.values()),
                false_negatives=sum(p.same and not flagged(p, threshold) for p in pairs),
                false_by_kind=dict(false_by_kind),
            )
        )
    return rows


def choose(rows: Sequence[Row], min_precision: float) -> tuple[Row, bool]:
    """The lowest threshold reaching ``min_precision`` and ``True``; else the
    most precise one (the lowest of equals) and ``False``."""
    for row in rows:
        if row.precision >= min_precision:
            return row, True
    defined = [row for row in rows if not math.isnan(row.precision)] or list(rows)
    return max(defined, key=lambda row: (_or_zero(row.precision), -row.threshold)), False


def _or_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _figure(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def kinds(pairs: Sequence[Pair], *, same: bool) -> list[str]:
    """The kinds of one label, in file order."""
    return list(dict.fromkeys(p.kind for p in pairs if p.same == same))


def sweep_table(rows: Sequence[Row], negative_kinds: Sequence[str]) -> str:
    lines = [
        "| threshold | flagged | precision | recall | F1 | false positives | "
        + " | ".join(negative_kinds)
        + " |",
        "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(negative_kinds),
    ]
    for row in rows:
        by_kind = " | ".join(str(row.false_by_kind.get(kind, 0)) for kind in negative_kinds)
        lines.append(
            f"| {row.threshold:.2f} | {row.true_positives + row.false_positives} "
            f"| {_figure(row.precision)} | {_figure(row.recall)} | {_figure(row.f1)} "
            f"| {row.false_positives} | {by_kind} |"
        )
    return "\n".join(lines)


def kind_table(pairs: Sequence[Pair], threshold: float) -> str:
    lines = [
        "| kind | label | pairs | flagged | recall / false-positive rate "
        "| cosine min | median | max |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for same in (True, False):
        for kind in kinds(pairs, same=same):
            cosines = [p.cosine for p in pairs if p.kind == kind]
            hits = sum(c >= threshold for c in cosines)
            lines.append(
                f"| {kind} | {'same' if same else 'different'} | {len(cosines)} | {hits} "
                f"| {hits / len(cosines):.3f} | {min(cosines):.3f} "
                f"| {statistics.median(cosines):.3f} | {max(cosines):.3f} |"
            )
    return "\n".join(lines)


def pair_list(pairs: Sequence[Pair]) -> str:
    return "\n".join(f'- {p.cosine:.3f} {p.kind}: "{p.a}" / "{p.b}"' for p in pairs)


def summary(pairs: Sequence[Pair], chosen: Row, reached: bool, min_precision: float) -> str:
    """What the check catches and misses at the chosen threshold, from the figures."""
    t = chosen.threshold
    recalls = {
        kind: sum(flagged(p, t) for p in pairs if p.kind == kind)
        / sum(p.kind == kind for p in pairs)
        for kind in kinds(pairs, same=True)
    }
    best = max(recalls, key=recalls.__getitem__)
    worst = min(recalls, key=recalls.__getitem__)
    negatives = kinds(pairs, same=False)
    top = sorted(
        (kind for kind in negatives if chosen.false_by_kind.get(kind)),
        key=lambda kind: -chosen.false_by_kind[kind],
    )
    clean = [kind for kind in negatives if not chosen.false_by_kind.get(kind)]
    choice = (
        f"the lowest threshold with precision >= {min_precision:.2f}"
        if reached
        else f"NO threshold reaches precision {min_precision:.2f}; this is the most precise one"
    )
    merged = (
        "it still merges "
        + ", ".join(f"{chosen.false_by_kind[kind]} {kind}" for kind in top)
        + " pairs (listed below)"
        if top
        else "it merges no different-fact pair of the set"
    )
    medians = {
        kind: statistics.median(p.cosine for p in pairs if p.kind == kind)
        for kind in (*recalls, *negatives)
    }
    closest = max(negatives, key=medians.__getitem__)
    farthest = min(recalls, key=medians.__getitem__)
    above = sum(medians[kind] < medians[closest] for kind in recalls)
    below = sum(medians[kind] > medians[farthest] for kind in negatives)
    verdict = (
        "A cosine threshold alone meets the precision asked of it on this set."
        if reached
        else "A cosine threshold alone cannot give this set the precision asked of it, so the "
        "check stays off by default; a stricter rule than the cosine is needed first."
    )
    return (
        f"**Chosen: {t:.2f}**, {choice}: precision {_figure(chosen.precision)}, "
        f"recall {_figure(chosen.recall)}. At {t:.2f} the check catches "
        f"{chosen.true_positives} of {chosen.true_positives + chosen.false_negatives} restated "
        f"facts, best for {best} ({recalls[best]:.2f}), worst for {worst} "
        f"({recalls[worst]:.2f}); {merged}. It never merged: "
        f"{', '.join(clean) or 'none of the kinds'}. The vectors weigh shared words far more "
        f"than what the words say: the closest different-fact kind, {closest} (median cosine "
        f"{medians[closest]:.3f}), sits above the median of {above} of {len(recalls)} "
        f"same-fact kinds, and the farthest same-fact kind, {farthest} (median "
        f"{medians[farthest]:.3f}), below the median of {below} of {len(negatives)} "
        f"different-fact kinds. {verdict}"
    )


def section(pairs: Sequence[Pair], rows: Sequence[Row], model: str, min_precision: float) -> str:
    chosen, reached = choose(rows, min_precision)
    positive, negative = kinds(pairs, same=True), kinds(pairs, same=False)
    counts = Counter(p.kind for p in pairs)

    def listed(names: Sequence[str]) -> str:
        return ", ".join(f"{name} {counts[name]}" for name in names)

    false_positives = sorted(
        (p for p in pairs if not p.same and flagged(p, chosen.threshold)),
        key=lambda p: -p.cosine,
    )
    misses = sorted(
        (p for p in pairs if p.same and not flagged(p, chosen.threshold)), key=lambda p: p.cosine
    )
    same_count = sum(p.same for p in pairs)
    return "\n\n".join(
        [
            "The optional near-duplicate check treats a new memory as a fact already kept when "
            "the cosine of its vector and a live entry's, from the default embedder, is at least "
            "a threshold. This measures which threshold, on "
            f"`{DATA.relative_to(ROOT)}`: {len(pairs)} hand-written pairs of short facts about "
            f"users. {same_count} say one fact twice ({listed(positive)}); "
            f"{len(pairs) - same_count} are different facts ({listed(negative)}), most of them "
            "hard: one word, name, number or direction apart.",
            f"`{COMMAND}` (`ARGS=--record` rewrites this section), embedder `{model}`, "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}. A pair is flagged when its cosine is "
            ">= the threshold; the last columns count the false positives of each different-fact "
            "kind.",
            sweep_table(rows, negative),
            summary(pairs, chosen, reached, min_precision),
            f"Per kind at {chosen.threshold:.2f} (a same-fact kind's share flagged is its recall, "
            "a different-fact kind's its false-positive rate):",
            kind_table(pairs, chosen.threshold),
            f"Different facts flagged at {chosen.threshold:.2f}:\n\n"
            + (pair_list(false_positives) or "- none"),
            f"The restated facts it misses most clearly (lowest cosine; {len(misses)} in all):\n\n"
            + (pair_list(misses[:10]) or "- none"),
        ]
    )


def record(doc: Path, body: str) -> None:
    """Puts ``body`` between the markers of ``doc``, appending the section when missing."""
    text = doc.read_text(encoding="utf-8")
    block = f"{START}\n{body}\n{END}"
    if START in text and END in text:
        before, _, rest = text.partition(START)
        _, _, after = rest.partition(END)
        text = before + block + after
    else:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n\n{block}\n"
    doc.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled pairs (JSON lines)")
    parser.add_argument("--min-precision", type=float, default=0.95)
    parser.add_argument(
        "--record", action="store_true", help="rewrite the docs/relevance.md section"
    )
    args = parser.parse_args(argv)

    embedder = load_embedder("local")
    assert embedder is not None  # "local" is never "none"
    pairs = score(read_pairs(args.data), embedder)
    rows = sweep(pairs)
    chosen, _ = choose(rows, args.min_precision)
    body = section(pairs, rows, embedder.model, args.min_precision)
    print(body)
    if args.record:
        record(DOC, body)
        print(f"\nrecorded in {DOC.relative_to(ROOT)}")
    print(f"threshold={chosen.threshold:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
