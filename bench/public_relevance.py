"""``make relevance`` on public benchmarks: RecallMemories in each mode beside
BM25 and the embedding model alone, computed in the same run over the same
turns (``bench.public_sets``; docs/relevance.md).

Per set, one ``mnemo serve`` (SQLite, the default embedder) and one user per
conversation. Turns are saved with BatchCreateMemories as the conversation
goes; each question is asked when everything before it is saved, of:

- ``lexical``: ``RecallMemories(query, semantic=false)``;
- ``semantic``: ``RecallMemories(query, semantic=true)`` (fusion);
- ``default``: ``RecallMemories(query)``, the call a client makes without options;
- ``context``: ``BuildContext(query)``'s entries (at most 5: recall@5 only);
- ``bm25``: BM25 (the ``bm25s`` package, k1 1.5, b 0.75) over the same saved
  turns, tokenised by Mnemo's own stems and stop words;
- ``dense``: the server's embedding model alone (cosine over the same turns).

Judgement: after a conversation is saved, every question of
``bench/data/off_topic_questions.json`` (no personal memory answers them) is
asked of its user with the defaults: how often ``RecallMemories`` returns
anything and ``BuildContext`` injects anything (BM25 and the model alone
always return their top 10: they have no judgement). And per mode, the
mean number of entries ``BuildContext`` injects for the benchmark's own
questions.

The harness embeds each turn once with the server's model and saves it with
its vector (the server then stores that vector instead of computing it), so
``dense`` and the server compare the same vectors. Metrics per question:
recall@k (the share of its evidence turns in the top k) and nDCG@10 (binary
gains), averaged overall and per category.

    python bench/public_relevance.py [--data DIR[:DIR...]] [--sets realtalk,realmem]
        [--limit-conversations N] [--markdown FILE] [--json FILE]

The sets are looked for in ``--data`` (or ``MNEMO_BENCH_DATA``), then
``../shared/benchmarks`` (RealMem) and ``~/.cache/mnemo-bench`` (REALTALK):
``bench.public_sets.data_directories``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bm25s  # noqa: E402
import numpy as np  # noqa: E402

from bench.public_sets import (  # noqa: E402
    SETS,
    Conversation,
    OffTopic,
    Save,
    data_directories,
    find_set,
    load,
    off_topic_questions,
    saved_text,
    turn_vectors,
)
from bench.servers import Databases, serve  # noqa: E402
from mnemo.client import MnemoClient  # noqa: E402
from mnemo_server.domain.embedding import query_vectors  # noqa: E402
from mnemo_server.domain.text_search import query_terms  # noqa: E402
from mnemo_server.embedders import load_embedder  # noqa: E402

MODES = ("lexical", "semantic", "default", "context", "bm25", "dense")
TOP = 10
SAVE_CHUNK = 100
OFF_TOPIC = "off-topic"
DEFAULT_CACHE = Path.home() / ".cache" / "mnemo-bench"


@dataclass
class Scores:
    """Per mode and category: the sums of each metric and the count."""

    sums: dict[tuple[str, str, str], float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def add(
        self, mode: str, category: str, ranked: Sequence[str], evidence: frozenset[str]
    ) -> None:
        for group in ("all", category):
            self.counts[(mode, group)] += 1
            self.sums[(mode, group, "recall@5")] += _recall(ranked[:5], evidence)
            self.sums[(mode, group, "recall@10")] += _recall(ranked[:10], evidence)
            self.sums[(mode, group, "ndcg@10")] += _ndcg(ranked[:10], evidence)
            self.sums[(mode, group, "entries")] += len(ranked)

    def add_off_topic(self, mode: str, kind: str, ranked: Sequence[str]) -> None:
        """An off-topic question of ``kind``: whether ``mode`` returned anything."""
        for group in (OFF_TOPIC, f"{OFF_TOPIC}: {kind}"):
            self.counts[(mode, group)] += 1
            self.sums[(mode, group, "answered")] += 1.0 if ranked else 0.0
            self.sums[(mode, group, "entries")] += len(ranked)

    def mean(self, mode: str, group: str, metric: str) -> float:
        count = self.counts[(mode, group)]
        return self.sums[(mode, group, metric)] / count if count else math.nan

    def groups(self) -> list[str]:
        """``all``, then the benchmark's categories (not the off-topic groups)."""
        named = {g for _, g in self.counts if g != "all" and not g.startswith(OFF_TOPIC)}
        return ["all", *sorted(named)]

    def off_topic_groups(self) -> list[str]:
        return sorted({g for _, g in self.counts if g.startswith(OFF_TOPIC)})


def _recall(ranked: Sequence[str], evidence: frozenset[str]) -> float:
    return len(evidence.intersection(ranked)) / len(evidence)


def _ndcg(ranked: Sequence[str], evidence: frozenset[str]) -> float:
    gain = sum(1.0 / math.log2(i + 2) for i, turn in enumerate(ranked) if turn in evidence)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(evidence), len(ranked) or 1)))
    return gain / ideal if ideal else 0.0


class Haystack:
    """What has been saved of one conversation: ids, texts, vectors, stems."""

    def __init__(self) -> None:
        self.turn_ids: list[str] = []
        self.vectors: list[np.ndarray[Any, Any]] = []
        self.tokens: list[list[str]] = []
        self.by_name: dict[str, str] = {}

    def bm25(self, question: str) -> list[str]:
        terms = list(query_terms(question))
        if not terms or not self.turn_ids:
            return []
        retriever = bm25s.BM25(k1=1.5, b=0.75)
        retriever.index([t or ["\u2205"] for t in self.tokens], show_progress=False)
        scores = retriever.get_scores(terms)
        order = np.argsort(-scores, kind="stable")[:TOP]
        return [self.turn_ids[i] for i in order if scores[i] > 0]

    def dense(self, vector: np.ndarray[Any, Any]) -> list[str]:
        if not self.vectors:
            return []
        cosines = np.stack(self.vectors) @ vector
        order = np.argsort(-cosines, kind="stable")[:TOP]
        return [self.turn_ids[i] for i in order]


def _run_conversation(
    client: MnemoClient,
    embedder: Any,
    user: str,
    conversation: Conversation,
    vectors: np.ndarray[Any, Any],
    scores: Scores,
    off_topic: Sequence[OffTopic],
) -> None:
    """Saves ``conversation``'s turns for ``user`` (each with its row of
    ``vectors``: ``turn_vectors``) and asks its questions as it goes, then
    the off-topic ones."""
    haystack = Haystack()
    pending: list[Save] = []
    rows = iter(vectors)

    def flush() -> None:
        for start in range(0, len(pending), SAVE_CHUNK):
            chunk = pending[start : start + SAVE_CHUNK]
            chunk_rows = [next(rows) for _ in chunk]
            entries = [
                {"text": saved_text(s.text), "embedding": (embedder.model, tuple(row.tolist()))}
                for s, row in zip(chunk, chunk_rows, strict=True)
            ]
            saved = client.batch_create_memories(user, entries).memories
            for save, memory, row in zip(chunk, saved, chunk_rows, strict=True):
                haystack.by_name[memory.name] = save.turn_id
                haystack.turn_ids.append(save.turn_id)
                haystack.vectors.append(row)
                haystack.tokens.append(list(query_terms(save.text)))
        pending.clear()

    for event in conversation.events:
        if isinstance(event, Save):
            pending.append(event)
            continue
        flush()
        ranked = _ask(client, embedder, user, event.text, haystack)
        for mode, turns in ranked.items():
            scores.add(mode, event.category, turns, event.evidence)
    flush()
    for question in off_topic:
        for mode, turns in _ask(client, embedder, user, question.text, haystack).items():
            scores.add_off_topic(mode, question.kind, turns)


def _ask(
    client: MnemoClient, embedder: Any, user: str, text: str, haystack: Haystack
) -> dict[str, list[str]]:
    def names(hits: Any) -> list[str]:
        return [haystack.by_name[h.memory.name] for h in hits]

    found = {
        "lexical": names(client.recall_memories(user, text, max_results=TOP, semantic=False)),
        "semantic": names(client.recall_memories(user, text, max_results=TOP, semantic=True)),
        "default": names(client.recall_memories(user, text, max_results=TOP)),
        "bm25": haystack.bm25(text),
    }
    context = client.build_context(user, text)
    found["context"] = [haystack.by_name[name] for name in context.memories]
    (query,) = query_vectors(embedder, [text])
    found["dense"] = haystack.dense(np.asarray(query, dtype=np.float32))
    return found


def measure(
    sets: Sequence[str], data: Sequence[Path], limit: int | None, cache: Path = DEFAULT_CACHE
) -> dict[str, Scores]:
    embedder = load_embedder("local", threads=max(1, (os.cpu_count() or 1)))
    assert embedder is not None
    off_topic = off_topic_questions()
    results: dict[str, Scores] = {}
    with contextlib.ExitStack() as stack:
        databases = Databases(stack)
        for name in sets:
            conversations = load(name, find_set(name, data))[:limit]
            scores = Scores()
            url = databases.fresh("sqlite")
            started = time.monotonic()
            with serve(url, extra_env={"MNEMO_EMBEDDER": "local"}) as server:
                with MnemoClient(server.target, timeout=120) as client:
                    for number, conversation in enumerate(conversations):
                        saves = [e for e in conversation.events if isinstance(e, Save)]
                        vectors = turn_vectors(embedder, cache, f"{name}-{number}", saves)
                        _run_conversation(
                            client, embedder, f"u{number}", conversation, vectors, scores, off_topic
                        )
            print(
                f"{name}: {len(conversations)} conversations in {time.monotonic() - started:.0f} s"
            )
            results[name] = scores
    return results


def markdown(results: dict[str, Scores]) -> str:
    lines: list[str] = []
    for name, scores in results.items():
        lines += [
            f"### {name}",
            "",
            "| mode | group | questions | recall@5 | recall@10 | nDCG@10 | entries |",
        ]
        lines.append("|---|---|---:|---:|---:|---:|---:|")
        for group in scores.groups():
            for mode in MODES:
                count = scores.counts[(mode, group)]
                cells = [
                    f"{scores.mean(mode, group, m):.3f}"
                    for m in ("recall@5", "recall@10", "ndcg@10")
                ]
                if mode == "context":
                    cells[1:] = ["-", "-"]
                entries = f"{scores.mean(mode, group, 'entries'):.2f}"
                lines.append(
                    f"| {mode} | {group} | {count} | " + " | ".join(cells) + f" | {entries} |"
                )
        lines += [
            "",
            "Off-topic questions (no personal memory answers them): the share answered with "
            "anything, and the mean entries returned.",
            "",
            "| mode | group | questions | answered | entries |",
            "|---|---|---:|---:|---:|",
        ]
        for group in scores.off_topic_groups():
            for mode in MODES:
                count = scores.counts[(mode, group)]
                lines.append(
                    f"| {mode} | {group} | {count} | {scores.mean(mode, group, 'answered'):.3f} "
                    f"| {scores.mean(mode, group, 'entries'):.2f} |"
                )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("MNEMO_BENCH_DATA", ""))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="where the turns' vectors are kept"
    )
    args = parser.parse_args(argv)
    data = data_directories(args.data)
    sets = [s for s in args.sets.split(",") if s]
    missing = []
    for name in sets:
        try:
            find_set(name, data)
        except FileNotFoundError as error:
            missing.append(name)
            print(
                f"public relevance: {error}: copy the files named in docs/relevance.md there "
                "(or give --data DIR); skipped",
                file=sys.stderr,
            )
    sets = [s for s in sets if s not in missing]
    if not sets:
        return 0
    results = measure(sets, data, args.limit_conversations, args.cache)
    table = markdown(results)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        payload = {
            name: {
                f"{mode}/{group}/{metric}": scores.mean(mode, group, metric)
                for mode in MODES
                for group in scores.groups()
                for metric in ("recall@5", "recall@10", "ndcg@10", "entries")
            }
            | {
                f"{mode}/{group}/{metric}": scores.mean(mode, group, metric)
                for mode in MODES
                for group in scores.off_topic_groups()
                for metric in ("answered", "entries")
            }
            for name, scores in results.items()
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
