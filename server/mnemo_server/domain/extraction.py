"""The built-in zero-LLM extractor: regular-expression patterns, kept as data
in ``extraction_patterns.json``, over the user's messages.

Only messages whose role is ``user`` are read; assistant, tool and system
messages never are (the model's own words are not facts about the user).
Each user message is split into sentences; a sentence is skipped when it is
longer than ``MAX_SENTENCE_CHARS``, when it is a question (ends with ``?``) or starts with a hypothetical or reported-speech
lead (``if``, ``suppose``, ``my friend``...; the data file lists them). Every
pattern is tried on every remaining sentence (case-insensitively, curly
quotes straightened); a pattern marked ``fallback`` is tried only when no
other pattern matched that sentence. The captured ``value`` is cleaned by its
kind (see the data file's ``about``) and dropped when it is on the pattern's
stop list (so "I'm sorry" is not a name and "I love you" not a preference).

Results are deterministic: ordered by message, then position in the message;
for a keyed result only the last one per key is kept (a later "my name is"
wins), for a key-less one only the first per text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal, Protocol

from mnemo_server.domain.limits import MAX_KEY_BYTES, MAX_TEXT_BYTES
from mnemo_server.domain.memory_models import MemoryDraft, MemoryScope, MemorySource
from mnemo_server.domain.text_search import singular, tokens

ValueKind = Literal["proper", "phrase", "sentence", "word"]
_VALUE_KINDS: tuple[ValueKind, ...] = ("proper", "phrase", "sentence", "word")

MAX_SLUG_CHARS = 48

_MAX_ENTRY_WORDS = 4
"""Stop-list and skip-list entries are at most this many words (checked at load)."""

MAX_SENTENCE_CHARS = 1_000
"""Longer "sentences" (pasted documents, code, logs) are not read: statements
about oneself are short, and this bounds the matching work per message."""

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_NAME_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['.-])*")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_EDGE_PUNCTUATION = " \t\"'.,;:!?()[]{}"


class ChatMessage(Protocol):
    """What the extractor reads of a message (``models.NewMessage`` fits)."""

    @property
    def role(self) -> str: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class ExtractedMemory:
    """A fact found in ``messages[message_index]`` by pattern ``pattern``."""

    key: str
    text: str
    scope: MemoryScope
    extractor: str
    pattern: str
    message_index: int
    value: str

    @property
    def label(self) -> str:
        """``extractor:pattern``, for ``MemoryCandidate.extractor``."""
        return f"{self.extractor}:{self.pattern}"

    def draft(self, conversation_id: str = "") -> MemoryDraft:
        """The memory to save or propose (conversation only if so scoped)."""
        scoped = self.scope is MemoryScope.CONVERSATION
        return MemoryDraft(
            text=self.text,
            key=self.key,
            scope=self.scope,
            conversation_id=conversation_id if scoped else "",
            source=MemorySource.EXTRACTOR,
            metadata={"extractor": self.extractor, "pattern": self.pattern},
        )


@dataclass(frozen=True)
class Pattern:
    """One compiled pattern of the data file."""

    name: str
    regex: re.Pattern[str]
    value_kind: ValueKind
    max_words: int
    allow_lowercase: bool
    stop_list: frozenset[str]
    key_template: str
    text_template: str
    scope: MemoryScope
    fallback: bool


@dataclass(frozen=True)
class PatternSet:
    """Every pattern plus the shared word lists of the data file."""

    extractor: str
    patterns: tuple[Pattern, ...]
    skip_prefixes: frozenset[str]
    connectors: frozenset[str]
    trailing_noise: tuple[str, ...]
    clause_ends: tuple[str, ...]
    pronoun_swaps: Mapping[str, str]


# --- loading ------------------------------------------------------------------


def _lowered(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(item.casefold() for item in items)


def _pattern(raw: Mapping[str, Any], stop_lists: Mapping[str, Sequence[str]]) -> Pattern:
    name = raw["name"]
    kind = raw["value"]
    if kind not in _VALUE_KINDS:
        raise ValueError(f"pattern {name}: unknown value kind {kind!r}")
    regex = re.compile(raw["regex"], re.IGNORECASE)
    if "value" not in regex.groupindex:
        raise ValueError(f"pattern {name}: the regex must capture a group named 'value'")
    probe = dict.fromkeys(regex.groupindex, "x") | {f"{g}_slug": "x" for g in regex.groupindex}
    for template in (raw["key"], raw["text"]):
        try:
            template.format_map(probe)
        except (KeyError, ValueError, IndexError) as exc:
            raise ValueError(f"pattern {name}: bad template {template!r}: {exc}") from exc
    return Pattern(
        name=name,
        regex=regex,
        value_kind=kind,
        max_words=int(raw["max_words"]),
        allow_lowercase=bool(raw.get("allow_lowercase", False)),
        stop_list=frozenset(_lowered(stop_lists[raw["stop_list"]])),
        key_template=raw["key"],
        text_template=raw["text"],
        scope=MemoryScope(raw["scope"]),
        fallback=bool(raw.get("fallback", False)),
    )


def parse_patterns(data: Mapping[str, Any]) -> PatternSet:
    """Compile a decoded pattern file. Raises ``ValueError`` (or ``KeyError``
    for a missing member) when the data is malformed."""
    stop_lists = data["stop_lists"]
    for entry in [
        *data["skip_sentences_starting_with"],
        *(w for v in stop_lists.values() for w in v),
    ]:
        if not 1 <= len(entry.split()) <= _MAX_ENTRY_WORDS:
            raise ValueError(f"list entry {entry!r} must be 1 to {_MAX_ENTRY_WORDS} words")
    return PatternSet(
        extractor=data["extractor"],
        patterns=tuple(_pattern(p, stop_lists) for p in data["patterns"]),
        skip_prefixes=frozenset(_lowered(data["skip_sentences_starting_with"])),
        connectors=frozenset(_lowered(data["connectors"])),
        trailing_noise=_lowered(data["trailing_noise"]),
        clause_ends=_lowered(data["clause_ends"]),
        pronoun_swaps={k.casefold(): v for k, v in data["pronoun_swaps"].items()},
    )


@lru_cache(maxsize=1)
def default_patterns() -> PatternSet:
    """The patterns shipped in ``extraction_patterns.json``, compiled once."""
    text = (
        resources.files("mnemo_server.domain")
        .joinpath("extraction_patterns.json")
        .read_text(encoding="utf-8")
    )
    return parse_patterns(json.loads(text))


# --- value cleaning -------------------------------------------------------------


def _starts_with_entry(text: str, entries: frozenset[str]) -> bool:
    """Whether the first 1..4 words of ``text`` (case-folded) are an entry."""
    words = text.casefold().split(maxsplit=_MAX_ENTRY_WORDS)[:_MAX_ENTRY_WORDS]
    return any(" ".join(words[:n]) in entries for n in range(1, len(words) + 1))


def _on_stop_list(value: str, stop_list: frozenset[str]) -> bool:
    return _starts_with_entry(value, stop_list)


def _proper(raw: str, pattern: Pattern, patterns: PatternSet) -> str | None:
    """The leading capitalized words (with connectors between them)."""
    words = raw.split()
    taken: list[str] = []
    names = 0
    for index, word in enumerate(words):
        clean = word.rstrip(_EDGE_PUNCTUATION).lstrip("\"'(")
        ended = clean != word.rstrip()  # punctuation right after the word ends the name
        if clean.casefold().endswith("'s"):
            return None  # "I'm Ada's mother": a possessive, not a name
        is_name = bool(_NAME_WORD.fullmatch(clean))
        if not taken and is_name and pattern.allow_lowercase and clean[:1].islower():
            taken.append(clean[:1].upper() + clean[1:])
            break
        if is_name and clean[:1].isupper():
            taken.append(clean)
            names += 1
        elif not taken and clean.casefold() == "the" and index + 1 < len(words):
            taken.append("the")
            continue
        elif taken and clean.casefold() in patterns.connectors and index + 1 < len(words):
            following = words[index + 1].strip(_EDGE_PUNCTUATION)
            if not following[:1].isupper():
                break
            taken.append(clean)
            continue
        else:
            break
        if ended or names == pattern.max_words:
            break
    while taken and (taken[-1].casefold() in patterns.connectors or taken[-1] == "the"):
        taken.pop()
    if not taken or taken == ["the"]:
        return None
    first = taken[1] if taken[0] == "the" and len(taken) > 1 else taken[0]
    if _on_stop_list(first, pattern.stop_list):
        return None
    return " ".join(taken)


def _cut_clause(raw: str, clause_ends: Sequence[str]) -> str:
    lowered = f" {raw.casefold()} "
    cut = len(lowered)
    for end in clause_ends:
        found = lowered.find(end)
        if found != -1:
            cut = min(cut, found)
    return raw[: max(0, cut - 1)] if cut < len(lowered) else raw


def _strip_noise(value: str, noise: Sequence[str]) -> str:
    changed = True
    while changed:
        changed = False
        for tail in noise:
            if value.casefold().endswith(" " + tail):
                value = value[: -len(tail) - 1].rstrip(_EDGE_PUNCTUATION)
                changed = True
    return value


def _phrase(raw: str, pattern: Pattern, patterns: PatternSet) -> str | None:
    value = _cut_clause(raw, patterns.clause_ends).strip(_EDGE_PUNCTUATION)
    value = _strip_noise(value, patterns.trailing_noise)
    words = value.split()
    if not words or len(words) > pattern.max_words or not any(c.isalpha() for c in value):
        return None
    if _on_stop_list(" ".join(words), pattern.stop_list):
        return None
    return " ".join(patterns.pronoun_swaps.get(w.casefold(), w) for w in words)


def _sentence(raw: str, pattern: Pattern) -> str | None:
    value = raw.strip().rstrip(_EDGE_PUNCTUATION.replace('"', "").replace("'", ""))
    words = value.split()
    if not words or len(words) > pattern.max_words:
        return None
    if _on_stop_list(" ".join(words), pattern.stop_list):
        return None
    return " ".join(words)


def _word(raw: str, pattern: Pattern) -> str | None:
    words = raw.casefold().split()
    if not words or len(words) > pattern.max_words:
        return None
    if _on_stop_list(" ".join(words), pattern.stop_list):
        return None
    return " ".join(words)


def _clean(raw: str, pattern: Pattern, patterns: PatternSet) -> str | None:
    if pattern.value_kind == "proper":
        return _proper(raw, pattern, patterns)
    if pattern.value_kind == "phrase":
        return _phrase(raw, pattern, patterns)
    if pattern.value_kind == "sentence":
        return _sentence(raw, pattern)
    return _word(raw, pattern)


def slug(value: str) -> str:
    """``"Spicy Foods"`` -> ``"spicy-food"``: normalized words, plurals made
    singular, joined by ``-``, at most ``MAX_SLUG_CHARS`` (cut at a word)."""
    out = ""
    for word in tokens(value):
        piece = singular(word)
        candidate = f"{out}-{piece}" if out else piece
        if len(candidate) > MAX_SLUG_CHARS:
            break
        out = candidate
    return out


# --- matching -------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    parts = (s.strip() for s in _SENTENCE_BREAK.split(text.translate(_QUOTES)))
    return [s for s in parts if s and len(s) <= MAX_SENTENCE_CHARS]


def _skipped(sentence: str, patterns: PatternSet) -> bool:
    if sentence.rstrip("\"') ").endswith("?"):
        return True
    return _starts_with_entry(
        " ".join(re.findall(r"[\w']+", sentence[:200])), patterns.skip_prefixes
    )


@dataclass(frozen=True)
class _Found:
    position: tuple[int, int]  # (sentence number, offset in the sentence)
    memory: ExtractedMemory


def _render(
    pattern: Pattern, match: re.Match[str], value: str, patterns: PatternSet, index: int
) -> ExtractedMemory | None:
    fields: dict[str, str] = {}
    for group, captured in match.groupdict().items():
        text = value if group == "value" else " ".join((captured or "").split()).casefold()
        fields[group] = text
        fields[f"{group}_slug"] = slug(text)
    if any(
        not fields[f"{g}_slug"]
        for g in match.groupdict()
        if f"{{{g}_slug}}" in pattern.key_template
    ):
        return None  # no usable key (a value without letters or digits)
    key = pattern.key_template.format_map(fields)
    text = pattern.text_template.format_map(fields)
    if len(key.encode("utf-8")) > MAX_KEY_BYTES or len(text.encode("utf-8")) > MAX_TEXT_BYTES:
        return None
    return ExtractedMemory(
        key=key,
        text=text,
        scope=pattern.scope,
        extractor=patterns.extractor,
        pattern=pattern.name,
        message_index=index,
        value=value,
    )


def _match_sentence(
    sentence: str, number: int, index: int, patterns: PatternSet, *, fallback: bool
) -> list[_Found]:
    found: list[_Found] = []
    for pattern in patterns.patterns:
        if pattern.fallback != fallback:
            continue
        position = 0
        while (match := pattern.regex.search(sentence, position)) is not None:
            position = match.start("value") + 1
            value = _clean(match.group("value"), pattern, patterns)
            memory = value and _render(pattern, match, value, patterns, index)
            if memory:
                found.append(_Found((number, match.start()), memory))
    return found


def _dedupe(found: list[_Found]) -> list[ExtractedMemory]:
    found.sort(key=lambda f: (f.memory.message_index, f.position))
    last_for_key = {f.memory.key: i for i, f in enumerate(found) if f.memory.key}
    seen_texts: set[str] = set()
    result: list[ExtractedMemory] = []
    for i, item in enumerate(found):
        memory = item.memory
        if memory.key:
            if last_for_key[memory.key] != i:
                continue
        elif memory.text in seen_texts:
            continue
        seen_texts.add(memory.text)
        result.append(memory)
    return result


def extract(
    messages: Sequence[ChatMessage], patterns: PatternSet | None = None
) -> list[ExtractedMemory]:
    """The facts the patterns find in the user messages of ``messages``.

    ``message_index`` is the index in ``messages`` (all roles counted). Pure,
    deterministic, never raises for any text.
    """
    active = patterns or default_patterns()
    found: list[_Found] = []
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        for number, sentence in enumerate(_sentences(message.text)):
            if _skipped(sentence, active):
                continue
            hits = _match_sentence(sentence, number, index, active, fallback=False)
            if not hits:
                hits = _match_sentence(sentence, number, index, active, fallback=True)
            found.extend(hits)
    return _dedupe(found)
