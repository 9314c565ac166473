"""Documents (``DocumentService``): JSON values under a user, addressed by a
namespace (a path of labels) and a key, as LangGraph's ``BaseStore`` keeps
them; and the policy of their reads: filters, ranking, namespace matching.

A document's resource name is ``users/{user}/documents/{document}``, where
``{document}`` is ``document_id(namespace, key)``: 26 characters of base32 of
the SHA-256 of the address, so that any namespace and key (any characters)
name one resource.

Search ranks in Python, over the documents the store read for the
namespace prefix, so both backends order the same documents the same way:

- without a query: most recently updated first, then by namespace and key;
- with ``query_vector``: by the best cosine similarity
  (``vectors.cosine``) of the document's text embeddings to it (max
  pooling, as LangGraph's stores do); documents
  without embeddings (not indexed) come after, unscored;
- with a text ``query`` only: by the share of the query's term weight that
  the document's indexed texts contain (the lexical share of recall,
  ``domain.ranking``: terms are ``text_search.query_terms``, weighted by
  ``TermStats.weight`` over the searched documents); an indexed document
  without a query term scores 0; one not indexed comes after, unscored.

A document's indexed texts are the ones its writer chose (``index``), or,
when it chose none (``index`` ``None``), the text of its whole value (every
string in it, and its object keys).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo_server.domain.ranking import TermStats
from mnemo_server.domain.text_search import query_terms, stems
from mnemo_server.domain.vectors import cosine

__all__ = [
    "Document",
    "DocumentFilter",
    "DocumentQuery",
    "FilterOperator",
    "IndexedText",
    "NamespaceCondition",
    "NamespaceQuery",
    "ScoredDocument",
    "document_id",
    "document_name",
    "list_namespaces",
    "matches_filters",
    "search",
    "value_text",
]

Namespace = tuple[str, ...]


def document_id(namespace: Namespace, key: str) -> str:
    """The id of the document at ``namespace`` / ``key`` (module doc)."""
    address = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(address.encode()).digest()
    return base64.b32encode(digest).decode().lower()[:26]


def document_name(user_id: str, namespace: Namespace, key: str) -> str:
    return f"users/{user_id}/documents/{document_id(namespace, key)}"


@dataclass(frozen=True)
class IndexedText:
    """One searchable text of a document, with the client's embedding of it
    (``None``: none)."""

    path: str
    text: str
    embedding: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Document:
    """A stored document. ``value`` is a JSON object (decoded); ``index``
    ``None`` means the whole value is searched, ``()`` that nothing is.
    ``ttl_micros``: how many microseconds after its last write or refreshing read it expires."""

    user_id: str
    namespace: Namespace
    key: str
    value: dict[str, Any]
    etag: str
    create_time: datetime
    update_time: datetime
    expire_time: datetime | None = None
    ttl_micros: int | None = None
    index: tuple[IndexedText, ...] | None = None

    @property
    def name(self) -> str:
        return document_name(self.user_id, self.namespace, self.key)

    def texts(self) -> tuple[str, ...]:
        """The texts a query is matched against."""
        if self.index is None:
            return (value_text(self.value),)
        return tuple(t.text for t in self.index)

    def embeddings(self) -> tuple[tuple[float, ...], ...]:
        if self.index is None:
            return ()
        return tuple(t.embedding for t in self.index if t.embedding is not None)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def value_text(value: Any) -> str:
    """The text of a whole JSON value: its strings, numbers and object keys."""
    return " ".join(_strings(value))


# ------------------------------------------------------------------ filters


class FilterOperator(enum.Enum):
    """LangGraph's filter operators (``$eq`` ... ``$lte``)."""

    EQ = "$eq"
    NE = "$ne"
    GT = "$gt"
    GTE = "$gte"
    LT = "$lt"
    LTE = "$lte"


@dataclass(frozen=True)
class DocumentFilter:
    """``value[field] <operator> operand`` on a top-level field."""

    field: str
    operator: FilterOperator
    operand: Any


def _equal(item: Any, operand: Any) -> bool:
    """JSON equality as LangGraph's stores compare (objects member by member:
    the operand's members must all be equal; arrays element by element)."""
    if isinstance(operand, dict):
        return isinstance(item, dict) and all(_equal(item.get(k), v) for k, v in operand.items())
    if isinstance(operand, list):
        return (
            isinstance(item, list)
            and len(item) == len(operand)
            and all(_equal(a, b) for a, b in zip(item, operand, strict=True))
        )
    return bool(item == operand)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _passes(value: dict[str, Any], condition: DocumentFilter) -> bool:
    item = value.get(condition.field)
    operator = condition.operator
    if operator is FilterOperator.EQ:
        return _equal(item, condition.operand)
    if operator is FilterOperator.NE:
        return not _equal(item, condition.operand)
    left, right = _number(item), _number(condition.operand)
    if left is None or right is None:
        return False
    if operator is FilterOperator.GT:
        return left > right
    if operator is FilterOperator.GTE:
        return left >= right
    if operator is FilterOperator.LT:
        return left < right
    return left <= right


def matches_filters(value: dict[str, Any], filters: Sequence[DocumentFilter]) -> bool:
    """Whether ``value`` passes every filter (comparisons of numbers with
    anything else fail)."""
    return all(_passes(value, f) for f in filters)


# ------------------------------------------------------------------ search


@dataclass(frozen=True)
class DocumentQuery:
    """A search: the documents of ``user_id`` under ``namespace_prefix``
    passing ``filters``, ranked (module doc), ``offset`` / ``limit``."""

    user_id: str
    namespace_prefix: Namespace = ()
    filters: tuple[DocumentFilter, ...] = ()
    query: str = ""
    query_vector: tuple[float, ...] | None = None
    offset: int = 0
    limit: int = 10


@dataclass(frozen=True)
class ScoredDocument:
    document: Document
    score: float | None = None


def _recent_first(document: Document) -> tuple[float, Namespace, str]:
    return (-document.update_time.timestamp(), document.namespace, document.key)


def _vector_scores(documents: Sequence[Document], vector: Sequence[float]) -> list[float | None]:
    return [
        max((cosine(vector, e) for e in embeddings), default=None)
        if (embeddings := d.embeddings())
        else None
        for d in documents
    ]


def _lexical_scores(documents: Sequence[Document], query: str) -> list[float | None]:
    terms = query_terms(query)
    indexed = [d.index is None or bool(d.index) for d in documents]
    contained = [frozenset(stem for text in d.texts() for stem in stems(text)) for d in documents]
    frequencies = Counter(t for found in contained for t in found if t in terms)
    stats = TermStats(entries=len(documents), frequencies=frequencies)
    weights = {t: stats.weight(t) for t in terms}
    total = sum(weights.values())
    return [
        (sum(weights[t] for t in terms if t in found) / total if total else 0.0)
        if is_indexed
        else None
        for found, is_indexed in zip(contained, indexed, strict=True)
    ]


def search(documents: Sequence[Document], query: DocumentQuery) -> list[ScoredDocument]:
    """The page of ``documents`` (already of the user, under the prefix and
    unexpired) that ``query`` asks for, best first (module doc)."""
    kept = sorted(
        (d for d in documents if matches_filters(d.value, query.filters)), key=_recent_first
    )
    if query.query_vector is not None:
        scores = _vector_scores(kept, query.query_vector)
    elif query.query:
        scores = _lexical_scores(kept, query.query)
    else:
        scores = [None] * len(kept)
    scored = sorted(
        zip(scores, range(len(kept)), strict=True),
        key=lambda pair: (pair[0] is None, -(pair[0] or 0.0), pair[1]),
    )
    page = scored[query.offset : query.offset + query.limit]
    return [ScoredDocument(kept[i], score) for score, i in page]


# --------------------------------------------------------------- namespaces


@dataclass(frozen=True)
class NamespaceCondition:
    """The first (``suffix`` False) or last labels of a namespace; ``*``
    matches any one label."""

    labels: Namespace
    suffix: bool = False

    def matches(self, namespace: Namespace) -> bool:
        if len(namespace) < len(self.labels):
            return False
        ends = namespace[len(namespace) - len(self.labels) :] if self.suffix else namespace
        return all(want in ("*", got) for want, got in zip(self.labels, ends, strict=False))


@dataclass(frozen=True)
class NamespaceQuery:
    user_id: str
    conditions: tuple[NamespaceCondition, ...] = ()
    max_depth: int | None = None
    offset: int = 0
    limit: int = 100

    @property
    def fixed_prefix(self) -> Namespace:
        """The leading labels every match starts with (for the store's query)."""
        prefix: list[str] = []
        for condition in self.conditions:
            if not condition.suffix:
                found = list(condition.labels)
                cut = found.index("*") if "*" in found else len(found)
                if cut > len(prefix):
                    prefix = found[:cut]
        return tuple(prefix)


def list_namespaces(namespaces: Sequence[Namespace], query: NamespaceQuery) -> list[Namespace]:
    """The page of distinct ``namespaces`` matching every condition, cut to
    ``max_depth``, sorted."""
    found = {n for n in namespaces if all(c.matches(n) for c in query.conditions)}
    if query.max_depth is not None:
        found = {n[: query.max_depth] for n in found}
    return sorted(found)[query.offset : query.offset + query.limit]
