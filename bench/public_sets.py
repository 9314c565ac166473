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
- **REALTALK** (``danny911kr/REALTALK``; no licence file, research use): ten
  real 21-day chats between two people, LoCoMo's format; every question is
  asked after the whole chat, its evidence ``dia_id`` turns (ranges such as
  ``D12:3-D12:5`` expanded, ids that name no turn dropped, questions left
  without evidence skipped).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


SETS = ("realmem", "realtalk")


def load(name: str, directory: Path) -> list[Conversation]:
    """The conversations of set ``name`` from its files in ``directory``.
    Raises ``FileNotFoundError`` when the directory holds none."""
    loader = {"realmem": _realmem, "realtalk": _realtalk}[name]
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


def _source_turns(raw: Any) -> dict[str, int]:
    """A session's memories (their text) -> the turn each came from."""
    if raw is None:
        return {}
    items = raw if isinstance(raw, list) else ast.literal_eval(raw)
    return {
        item["content"]: int(item["source_turn"])
        for item in items
        if isinstance(item, dict) and isinstance(item.get("content"), str) and "source_turn" in item
    }


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
