"""The recall relevance set (``tests/relevance/*.json``, docs/relevance.md):
read and check it, save it into a running server through the public client,
run every query lexical and semantic, and score the rankings.

    relevance_set = read_set()                      # ValueError if inconsistent
    with MnemoClient(target) as client:             # a server with an embedder
        save_set(client, relevance_set)             # Create/Update/DeleteMemory
        rankings = run_queries(client, relevance_set)
    report = score(relevance_set, rankings)
    report.figures("semantic").overall.ndcg       # also .recall, per tag

Metrics, per mode (``lexical``, ``semantic``), over the queries that have at
least one relevant (grade >= 1) entry:

- recall@5: the fraction of a query's relevant entries among its first 5
  hits, averaged over queries;
- nDCG@10: DCG of the first 10 hits (gain ``2**grade - 1``, discount
  ``log2(rank + 1)``) divided by the DCG of the ideal order of the query's
  judgements, averaged over queries.

A forbidden hit is a hit the recall must never return, whatever the
judgements say: an archived (superseded) or deleted entry, an entry outside
the query's scope (another conversation's, a conversation entry in a recall
that names no conversation or filters on identity, an identity entry in a
conversation-only recall), another user's entry, an entry whose returned text
is not its current text, or an updated entry that the query's words match
only in its previous text (``stale``) returned with the lexical signal.
Forbidden hits count for every query, judged or not, and earn no gain.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from mnemo.client import MnemoClient
from mnemo.v1 import memories_pb2 as mm

SET_DIR = Path(__file__).resolve().parents[1] / "relevance"
TAGS = ("exact", "paraphrase", "inflection", "name", "number", "scope", "archived")
RECALL_AT = 5
NDCG_AT = 10
GRADES = (1, 2, 3)
METRICS = (f"recall@{RECALL_AT}", f"ndcg@{NDCG_AT}")
THRESHOLDS = SET_DIR / "thresholds.json"

Scope = Literal["identity", "conversation"]
Mode = Literal["lexical", "semantic"]
MODES: tuple[Mode, ...] = ("lexical", "semantic")


@dataclass(frozen=True)
class Entry:
    """One memory of the set, as saved: ``text`` first, then ``update``
    (UpdateMemory) if any, then deleted if ``delete``."""

    user: str
    memory_id: str
    text: str
    key: str = ""
    conversation: str = ""
    pinned: bool = False
    update: str | None = None
    delete: bool = False

    @property
    def current_text(self) -> str:
        return self.text if self.update is None else self.update

    @property
    def chain(self) -> tuple[str, str, str] | None:
        """What a keyed save supersedes by: (user, conversation, key)."""
        return (self.user, self.conversation, self.key) if self.key else None


@dataclass(frozen=True)
class Query:
    """One recall of the set and its judgements (see queries.json)."""

    query_id: str
    user: str
    text: str
    tags: tuple[str, ...]
    relevant: Mapping[str, int]
    conversation: str = ""
    scope: Scope | None = None
    forbidden: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """One recall result, as the server returned it."""

    name: str
    text: str
    lexical: bool


@dataclass(frozen=True)
class RelevanceSet:
    """The memories (in save order, per user) and the queries."""

    entries: Mapping[str, Entry]
    queries: tuple[Query, ...]
    superseded: frozenset[str]
    """The entries a later keyed save of their chain archives."""

    def users(self) -> list[str]:
        return list(dict.fromkeys(e.user for e in self.entries.values()))

    def entries_of(self, user: str) -> list[Entry]:
        return [e for e in self.entries.values() if e.user == user]

    def why_hidden(self, query: Query, memory_id: str) -> str | None:
        """Why ``query`` must not return this entry; ``None`` if it may."""
        entry = self.entries.get(memory_id)
        if entry is None or entry.user != query.user:
            return "another user's or an unknown entry"
        if entry.delete:
            return "deleted"
        if memory_id in self.superseded:
            return "superseded"
        if not entry.conversation:
            return (
                "identity entry, conversation-only recall"
                if query.scope == "conversation"
                else None
            )
        if query.scope == "identity":
            return "conversation entry, identity-only recall"
        if not query.conversation:
            return "conversation entry, the recall names no conversation"
        if entry.conversation != query.conversation:
            return "another conversation's entry"
        return None

    def why_forbidden(self, query: Query, hit: Hit) -> str | None:
        """Why returning ``hit`` for ``query`` is a forbidden hit, or ``None``."""
        user, _, memory_id = hit.name.removeprefix("users/").partition("/memories/")
        if user != query.user:
            return "another user's entry"
        hidden = self.why_hidden(query, memory_id)
        if hidden is not None:
            return hidden
        if hit.text != self.entries[memory_id].current_text:
            return "stale text"
        if memory_id in query.stale and hit.lexical:
            return "matched by its previous text"
        return None


# ---------------------------------------------------------------- reading


def _entry(user: str, raw: Mapping[str, Any]) -> Entry:
    return Entry(
        user=user,
        memory_id=raw["id"],
        text=raw["text"],
        key=raw.get("key", ""),
        conversation=raw.get("conversation", ""),
        pinned=raw.get("pinned", False),
        update=raw.get("update"),
        delete=raw.get("delete", False),
    )


def _query(raw: Mapping[str, Any]) -> Query:
    return Query(
        query_id=raw["id"],
        user=raw["user"],
        text=raw["text"],
        tags=tuple(raw["tags"]),
        relevant=dict(raw["relevant"]),
        conversation=raw.get("conversation", ""),
        scope=raw.get("scope"),
        forbidden=tuple(raw.get("forbidden", ())),
        stale=tuple(raw.get("stale", ())),
    )


def _superseded(entries: Iterable[Entry]) -> frozenset[str]:
    newest: dict[tuple[str, str, str], str] = {}
    archived: set[str] = set()
    for entry in entries:
        if entry.chain is None:
            continue
        if entry.chain in newest:
            archived.add(newest[entry.chain])
        newest[entry.chain] = entry.memory_id
    return frozenset(archived)


def _problems(relevance_set: RelevanceSet) -> Iterable[str]:
    """What makes the set inconsistent (judging a hidden entry relevant, a
    forbidden entry that a recall may return, an unknown tag...)."""
    seen: set[str] = set()
    for query in relevance_set.queries:
        where = f"query {query.query_id!r}"
        if query.query_id in seen:
            yield f"{where}: duplicate id"
        seen.add(query.query_id)
        if not query.tags or not set(query.tags) <= set(TAGS):
            yield f"{where}: tags must be some of {', '.join(TAGS)}"
        if query.scope not in (None, "identity", "conversation"):
            yield f"{where}: scope must be identity or conversation"
        if query.scope == "conversation" and not query.conversation:
            yield f"{where}: a conversation-only recall needs a conversation"
        for memory_id, grade in query.relevant.items():
            if grade not in GRADES:
                yield f"{where}: grade of {memory_id!r} must be one of {GRADES}"
            if (why := relevance_set.why_hidden(query, memory_id)) is not None:
                yield f"{where}: {memory_id!r} is judged relevant but must not be returned ({why})"
        for memory_id in query.forbidden:
            if relevance_set.why_hidden(query, memory_id) is None:
                yield f"{where}: {memory_id!r} is listed as forbidden but may be returned"
        for memory_id in query.stale:
            entry = relevance_set.entries.get(memory_id)
            if entry is None or entry.user != query.user or entry.update is None:
                yield f"{where}: {memory_id!r} is listed as stale but is no updated entry of the user"


def read_set(directory: Path = SET_DIR) -> RelevanceSet:
    """The set in ``directory`` (memories.json, queries.json). Raises
    ``ValueError`` listing every inconsistency, ``KeyError`` for a missing
    required field."""
    memories = json.loads((directory / "memories.json").read_text())
    entries: dict[str, Entry] = {}
    duplicates: list[str] = []
    for user, about in memories["users"].items():
        for raw in about["memories"]:
            entry = _entry(user, raw)
            if entry.memory_id in entries:
                duplicates.append(f"memory {entry.memory_id!r}: duplicate id")
            entries[entry.memory_id] = entry
    queries = json.loads((directory / "queries.json").read_text())["queries"]
    relevance_set = RelevanceSet(
        entries=entries,
        queries=tuple(_query(raw) for raw in queries),
        superseded=_superseded(entries.values()),
    )
    problems = [*duplicates, *_problems(relevance_set)]
    if problems:
        raise ValueError("the relevance set is inconsistent:\n" + "\n".join(problems))
    return relevance_set


# ------------------------------------------------------- saving, querying


def _save_user(client: MnemoClient, relevance_set: RelevanceSet, user: str) -> None:
    live: dict[tuple[str, str, str], str] = {}
    for entry in relevance_set.entries_of(user):
        saved = client.create_memory(
            user,
            entry.text,
            key=entry.key,
            conversation=entry.conversation or None,
            pinned=entry.pinned,
            memory_id=entry.memory_id,
        )
        expected = [live[entry.chain]] if entry.chain in live else []
        archived = [name.rpartition("/")[2] for name in saved.archived]
        if archived != expected:
            raise AssertionError(f"saving {entry.memory_id} archived {archived}, not {expected}")
        if entry.chain is not None:
            live[entry.chain] = entry.memory_id
        if entry.update is not None:
            client.update_memory(user, entry.memory_id, text=entry.update)
        if entry.delete:
            client.delete_memory(user, entry.memory_id)


def save_set(client: MnemoClient, relevance_set: RelevanceSet) -> None:
    """Save every entry through CreateMemory (then UpdateMemory, DeleteMemory
    as the set says), each user's in file order so that recency ties break
    the same way on every run; users in parallel. Raises ``AssertionError``
    if a save archives other entries than the set expects."""
    users = relevance_set.users()
    with ThreadPoolExecutor(max_workers=len(users)) as pool:
        for done in [pool.submit(_save_user, client, relevance_set, u) for u in users]:
            done.result()


Rankings = dict[tuple[Mode, str], tuple[Hit, ...]]
"""The hits of every (mode, query id), best first."""


def _recall(client: MnemoClient, query: Query, mode: Mode) -> tuple[Hit, ...]:
    hits = client.recall_memories(
        query.user,
        query.text,
        conversation=query.conversation or None,
        scope=query.scope,
        max_results=NDCG_AT,
        min_score=0.0,  # the ranking, whatever the judgement (docs/relevance.md)
        semantic=mode == "semantic",
    )
    return tuple(
        Hit(h.memory.name, h.memory.text, mm.RECALL_SIGNAL_LEXICAL in h.signals) for h in hits
    )


def run_queries(client: MnemoClient, relevance_set: RelevanceSet) -> Rankings:
    """Every query in both modes (the server needs an embedder for semantic)."""
    calls = [(mode, q) for mode in MODES for q in relevance_set.queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = pool.map(lambda call: _recall(client, call[1], call[0]), calls)
        return {(mode, q.query_id): hits for (mode, q), hits in zip(calls, found, strict=True)}


def ranked_names(rankings: Rankings) -> dict[str, list[str]]:
    """``"mode/query"`` -> the names returned, best first (to compare runs)."""
    return {f"{mode}/{query}": [h.name for h in hits] for (mode, query), hits in rankings.items()}


# ---------------------------------------------------------------- scoring


def _dcg(grades: Sequence[int]) -> float:
    return sum((2.0**grade - 1) / math.log2(rank + 1) for rank, grade in enumerate(grades, start=1))


@dataclass(frozen=True)
class ForbiddenHit:
    query_id: str
    mode: Mode
    rank: int
    name: str
    reason: str


@dataclass(frozen=True)
class QueryScore:
    """One query in one mode; ``recall`` and ``ndcg`` are ``None`` for a
    query without relevant entries."""

    query: Query
    mode: Mode
    recall: float | None
    ndcg: float | None
    forbidden: tuple[ForbiddenHit, ...]
    returned: tuple[str, ...]


def score_query(
    relevance_set: RelevanceSet, query: Query, mode: Mode, hits: Sequence[Hit]
) -> QueryScore:
    forbidden = []
    grades = []
    for rank, hit in enumerate(hits, start=1):
        reason = relevance_set.why_forbidden(query, hit)
        if reason is not None:
            forbidden.append(ForbiddenHit(query.query_id, mode, rank, hit.name, reason))
        memory_id = hit.name.rpartition("/")[2]
        grades.append(0 if reason else query.relevant.get(memory_id, 0))
    returned = tuple(h.name.rpartition("/")[2] for h in hits)
    recall = ndcg = None
    if query.relevant:
        found = sum(1 for g in grades[:RECALL_AT] if g > 0)
        recall = found / len(query.relevant)
        ideal = sorted(query.relevant.values(), reverse=True)[:NDCG_AT]
        ndcg = _dcg(grades[:NDCG_AT]) / _dcg(ideal)
    return QueryScore(query, mode, recall, ndcg, tuple(forbidden), returned)


@dataclass(frozen=True)
class Figures:
    """The means over a slice of the queries of one mode."""

    queries: int
    """Queries with relevant entries (those the means are over)."""
    recall: float
    ndcg: float
    forbidden_hits: int
    all_queries: int
    """Every query of the slice, judged or not (forbidden hits are over these)."""

    def metric(self, name: str) -> float:
        """The figure ``METRICS`` names ``name``."""
        return {METRICS[0]: self.recall, METRICS[1]: self.ndcg}[name]

    @classmethod
    def of(cls, scores: Sequence[QueryScore]) -> Figures:
        judged = [s for s in scores if s.recall is not None and s.ndcg is not None]
        return cls(
            queries=len(judged),
            recall=fmean(s.recall for s in judged if s.recall is not None) if judged else 0.0,
            ndcg=fmean(s.ndcg for s in judged if s.ndcg is not None) if judged else 0.0,
            forbidden_hits=sum(len(s.forbidden) for s in scores),
            all_queries=len(scores),
        )


@dataclass(frozen=True)
class ModeFigures:
    overall: Figures
    by_tag: Mapping[str, Figures]


@dataclass(frozen=True)
class Report:
    scores: tuple[QueryScore, ...]
    modes: Mapping[Mode, ModeFigures]

    def figures(self, mode: Mode) -> ModeFigures:
        return self.modes[mode]

    def forbidden_hits(self) -> list[ForbiddenHit]:
        return [hit for s in self.scores for hit in s.forbidden]

    def worst(self, mode: Mode, count: int) -> list[QueryScore]:
        """The judged queries of ``mode`` with the lowest nDCG@10 (ties: id)."""
        judged = [s for s in self.scores if s.mode == mode and s.ndcg is not None]
        return sorted(judged, key=lambda s: (s.ndcg, s.query.query_id))[:count]


def score(relevance_set: RelevanceSet, rankings: Rankings) -> Report:
    """Score every (mode, query) of ``rankings`` (see the module doc)."""
    scores = tuple(
        score_query(relevance_set, q, mode, rankings[(mode, q.query_id)])
        for mode in MODES
        for q in relevance_set.queries
        if (mode, q.query_id) in rankings
    )
    modes = {}
    for mode in MODES:
        of_mode = [s for s in scores if s.mode == mode]
        if of_mode:
            by_tag = {t: Figures.of([s for s in of_mode if t in s.query.tags]) for t in TAGS}
            modes[mode] = ModeFigures(Figures.of(of_mode), by_tag)
    return Report(scores, modes)


# ------------------------------------------------------------- thresholds


def floor3(value: float) -> float:
    """``value`` rounded down to 3 decimals (a threshold the figure meets)."""
    floor = math.floor(value * 1000) / 1000
    return floor if floor <= value else round(floor - 0.001, 3)


def thresholds_of(report: Report, comment: str) -> dict[str, Any]:
    """The content of thresholds.json for ``report``: each overall figure of
    each mode rounded down to 3 decimals."""
    return {
        "comment": comment,
        **{
            mode: {name: floor3(report.figures(mode).overall.metric(name)) for name in METRICS}
            for mode in MODES
        },
    }


def below_thresholds(report: Report, path: Path = THRESHOLDS) -> list[str]:
    """Every overall figure of ``report`` below its threshold in ``path``."""
    recorded = json.loads(path.read_text())
    return [
        f"{mode} {name}: {measured:.4f} < {recorded[mode][name]}"
        for mode in MODES
        for name in METRICS
        if (measured := report.figures(mode).overall.metric(name)) < recorded[mode][name]
    ]
