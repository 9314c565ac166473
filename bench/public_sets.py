"""Public conversational-memory benchmarks with evidence labels, read from a
local copy (``make relevance`` cannot download them: see docs/relevance.md).

Each set becomes a list of ``Conversation``: in order, the turns a memory
service would have saved (``Save``) and the questions asked of it (``Ask``),
each with the turns that hold its answer (its evidence) and a category. A
question is asked when everything before it has been saved, so a run
measures the memory as it stood then.

- **RealMem** (``zhiyuan5986/RealMemBench``, Apache-2.0): ten personas'
  sessions with an assistant; a query is a user turn marked ``is_query``,
  its evidence the turns (``source_turn``) of the session memories its
  answer used. The query's own session's earlier turns are saved before it.
- **RealMem facts** (the same files): the short facts each session's
  ``extracted_memory`` holds, saved as an extractor or a ``memory.save`` tool
  would save them, one entry per fact; a query's evidence is the facts its
  answer used. What gecx-chat's long-term memory holds, where the turns are
  what a conversation history holds.
- **REALTALK** (``danny911kr/REALTALK``; no licence file, research use): ten
  real 21-day chats between two people, LoCoMo's format; every question is
  asked after the whole chat, its evidence ``dia_id`` turns (ranges such as
  ``D12:3-D12:5`` expanded, ids that name no turn dropped, questions left
  without evidence skipped).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Save:
    turn_id: str
    text: str


@dataclass(frozen=True)
class Ask:
    question_id: str
    text: str
    evidence: frozenset[str]
    category: str


@dataclass
class Conversation:
    name: str
    events: list[Save | Ask] = field(default_factory=list)

    @property
    def questions(self) -> list[Ask]:
        return [e for e in self.events if isinstance(e, Ask)]


SETS = ("realmem", "realmem-facts", "realtalk")
_DIRECTORY = {"realmem-facts": "realmem"}
"""Sets read from another set's files."""

_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (_ROOT.parent / "shared" / "benchmarks", Path.home() / ".cache" / "mnemo-bench")
"""Where the sets are looked for, in order: the workspace's shared copy
(RealMem, Apache-2.0), then the per-user cache (REALTALK, kept out of the
repository)."""


OFF_TOPIC = _ROOT / "bench" / "data" / "off_topic_questions.json"


SAVED_CHARACTERS = 4000
SAVED_BYTES = 4096
"""The harnesses save (and embed) a turn's first ``SAVED_CHARACTERS``
characters, fewer when they take more than the server's 4,096 bytes of UTF-8
(``saved_text``)."""


def saved_text(text: str) -> str:
    """What of ``text`` the harnesses save: its longest prefix of at most
    ``SAVED_CHARACTERS`` characters and ``SAVED_BYTES`` bytes of UTF-8."""
    return text[:SAVED_CHARACTERS].encode()[:SAVED_BYTES].decode(errors="ignore")


class DocumentEmbedder(Protocol):
    """What ``turn_vectors`` needs of an embedder (``domain.embedding.Embedder``)."""

    @property
    def model(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]: ...


def turn_vectors(
    embedder: DocumentEmbedder, cache: Path, name: str, saves: Sequence[Save]
) -> npt.NDArray[np.float32]:
    """The document vectors of ``saves`` as saved (``saved_text``), one row each, kept in
    ``cache/vectors/<model>/<name>-<digest>.npy`` (the digest of the texts:
    other texts are embedded again). Embedding RealMem's 14,000 long turns
    takes most of an hour on two cores; both harnesses share the files."""
    digest = hashlib.sha256("\n".join(s.text for s in saves).encode()).hexdigest()[:16]
    path = cache / "vectors" / embedder.model / f"{name}-{digest}.npy"
    if path.exists():
        loaded: npt.NDArray[np.float32] = np.load(path)
        return loaded
    texts = [saved_text(s.text) for s in saves]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


@dataclass(frozen=True)
class OffTopic:
    """A question no personal memory answers (``OFF_TOPIC``), of a ``kind``:
    general, arithmetic, programming or definition."""

    kind: str
    text: str


def off_topic_questions() -> list[OffTopic]:
    """Every question of ``OFF_TOPIC``, in file order."""
    data = json.loads(OFF_TOPIC.read_text(encoding="utf-8"))
    return [OffTopic(str(q["kind"]), str(q["text"])) for q in data["questions"]]


def data_directories(given: str = "") -> list[Path]:
    """The directories to look for sets in: ``given`` (``os.pathsep``-
    separated, e.g. ``MNEMO_BENCH_DATA``) before ``DEFAULT_DATA``."""
    named = [Path(p).expanduser() for p in given.split(os.pathsep) if p]
    return [*named, *DEFAULT_DATA]


def find_set(name: str, directories: Sequence[Path]) -> Path:
    """The first ``<directory>/<name>`` holding the set's JSON files.
    Raises ``FileNotFoundError`` naming where it looked."""
    folder = _DIRECTORY.get(name, name)
    for directory in directories:
        if any((directory / folder).glob("*.json")):
            return directory / folder
    looked = ", ".join(str(d / folder) for d in directories)
    raise FileNotFoundError(f"no {name} files in {looked}")


def load(name: str, directory: Path) -> list[Conversation]:
    """The conversations of set ``name`` from its files in ``directory``.
    Raises ``FileNotFoundError`` when the directory holds none."""
    loader = {"realmem": _realmem, "realmem-facts": _realmem_facts, "realtalk": _realtalk}[name]
    files = sorted(directory.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no {name} files in {directory}")
    return [loader(path) for path in files]


# ------------------------------------------------------------------ RealMem


def _realmem(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = Conversation(data["_metadata"]["person_name"])
    sources = {
        session["session_uuid"]: _source_turns(session.get("extracted_memory"))
        for session in data["dialogues"]
    }
    for session in data["dialogues"]:
        turns = session["dialogue_turns"]
        uuid = session["session_uuid"]
        for index, turn in enumerate(turns):
            if turn.get("is_query") and index + 1 < len(turns):
                evidence = frozenset(_realmem_evidence(turns[index + 1], sources))
                if evidence:
                    conversation.events.append(
                        Ask(turn["query_id"], turn["content"], evidence, turn["category_name"])
                    )
            conversation.events.append(
                Save(f"{uuid}:{index}", f"{turn['speaker']}: {turn['content']}")
            )
    return conversation


def _realmem_facts(path: Path) -> Conversation:
    """RealMem as a memory service fed by an extractor sees it: the facts
    each session's ``extracted_memory`` holds (short statements such as
    "User has a son."), each saved right after the turn it came from; a
    query's evidence is the facts its answer used (``memory_used``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = Conversation(f"{data['_metadata']['person_name']} (facts)")
    facts: dict[tuple[str, str], str] = {}
    by_turn: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for session in data["dialogues"]:
        for number, item in enumerate(_memory_items(session.get("extracted_memory"))):
            fact_id = f"{session['session_uuid']}#{number}"
            facts[(session["session_uuid"], item["content"])] = fact_id
            turn = (session["session_uuid"], int(item["source_turn"]))
            by_turn.setdefault(turn, []).append((fact_id, item["content"]))
    saved: set[str] = set()
    for session in data["dialogues"]:
        turns = session["dialogue_turns"]
        for index, turn in enumerate(turns):
            if turn.get("is_query") and index + 1 < len(turns):
                used = turns[index + 1].get("memory_used") or ()
                evidence = frozenset(
                    facts[key]
                    for u in used
                    if (key := (u.get("session_uuid"), u.get("content"))) in facts
                    and facts[key] in saved
                )
                if evidence:
                    conversation.events.append(
                        Ask(turn["query_id"], turn["content"], evidence, turn["category_name"])
                    )
            for fact_id, text in by_turn.get((session["session_uuid"], index), ()):
                conversation.events.append(Save(fact_id, text))
                saved.add(fact_id)
    return conversation


def _memory_items(raw: Any) -> list[dict[str, Any]]:
    """A session's ``extracted_memory`` (a list, or its Python literal)."""
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else ast.literal_eval(raw)
    return [
        item
        for item in items
        if isinstance(item, dict) and isinstance(item.get("content"), str) and "source_turn" in item
    ]


def _source_turns(raw: Any) -> dict[str, int]:
    """A session's memories (their text) -> the turn each came from."""
    return {item["content"]: int(item["source_turn"]) for item in _memory_items(raw)}


def _realmem_evidence(answer: dict[str, Any], sources: dict[str, dict[str, int]]) -> Iterator[str]:
    for used in answer.get("memory_used") or ():
        if not isinstance(used.get("content"), str):
            continue
        turn = sources.get(used["session_uuid"], {}).get(used["content"])
        if turn is not None:
            yield f"{used['session_uuid']}:{turn}"


# ----------------------------------------------------------------- REALTALK

_DIA = re.compile(r"D(\d+):(\d+)")


def _realtalk(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = Conversation(path.stem)
    known: set[str] = set()
    number = 1
    while f"session_{number}" in data:
        for turn in data[f"session_{number}"]:
            text = turn.get("clean_text") or turn.get("text") or ""
            conversation.events.append(Save(turn["dia_id"], f"{turn['speaker']}: {text}"))
            known.add(turn["dia_id"])
        number += 1
    for index, qa in enumerate(data["qa"]):
        evidence = frozenset(e for e in _expanded(qa.get("evidence") or ()) if e in known)
        if evidence:
            category = str(qa.get("category", "?"))
            conversation.events.append(
                Ask(f"{path.stem}:{index}", qa["question"], evidence, category)
            )
    return conversation


def _expanded(evidence: Any) -> Iterator[str]:
    for item in evidence:
        for part in re.split(r"[;,]", str(item)):
            ids = [(int(s), int(t)) for s, t in _DIA.findall(part)]
            if len(ids) == 2 and "-" in part and ids[0][0] == ids[1][0]:
                session, (low, high) = ids[0][0], sorted((ids[0][1], ids[1][1]))
                yield from (f"D{session}:{turn}" for turn in range(low, high + 1))
            else:
                yield from (f"D{s}:{t}" for s, t in ids)
