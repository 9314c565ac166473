"""DocumentService requests -> validated domain values, at the edge. Every
problem of one request is collected (``api.validation``) and raised at once:
``INVALID_FIELD`` / ``FIELD_TOO_LARGE`` with a field violation each; the
parent is ``INVALID_NAME``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from google.protobuf import duration_pb2

from mnemo.v1 import documents_pb2 as pb
from mnemo_server.api.validation import MAX_TEXT_BYTES, Validator
from mnemo_server.domain.documents import (
    DocumentFilter,
    DocumentQuery,
    FilterOperator,
    IndexedText,
    Namespace,
    NamespaceCondition,
    NamespaceQuery,
)
from mnemo_server.domain.messages import loads_strict

__all__ = [
    "MAX_VALUE_BYTES",
    "index_of",
    "namespace_query",
    "search_query",
    "ttl_micros",
    "validated_address",
    "value_of",
]

MAX_LABELS = 32
MAX_LABEL_CHARS = 256
MAX_KEY_CHARS = 1024
MAX_VALUE_BYTES = 1_048_576
"""A document's value, as JSON text."""
MAX_INDEXED_TEXTS = 64
MAX_DIMENSIONS = 8192
MAX_FILTERS = 32
MAX_FIELD_CHARS = 256
MAX_CONDITIONS = 8
MAX_LIMIT = 1000
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_NAMESPACE_LIMIT = 100
MAX_TTL_SECONDS = 100 * 366 * 86_400

_OPERATORS = {
    pb.DocumentFilter.OPERATOR_EQ: FilterOperator.EQ,
    pb.DocumentFilter.OPERATOR_NE: FilterOperator.NE,
    pb.DocumentFilter.OPERATOR_GT: FilterOperator.GT,
    pb.DocumentFilter.OPERATOR_GTE: FilterOperator.GTE,
    pb.DocumentFilter.OPERATOR_LT: FilterOperator.LT,
    pb.DocumentFilter.OPERATOR_LTE: FilterOperator.LTE,
}


def labels(v: Validator, values: Sequence[str], field: str, *, required: bool) -> Namespace:
    """A namespace: at least one label when ``required``, each 1-256
    characters without NUL, at most 32 labels."""
    if required and not values:
        v.invalid(field, "needs at least one label")
    v.max_items(len(values), field, MAX_LABELS)
    for index, label in enumerate(values[: MAX_LABELS + 1]):
        item = f"{field}[{index}]"
        if not label:
            v.invalid(item, "must not be empty")
        v.max_chars(label, item, MAX_LABEL_CHARS)
        if "\x00" in label:
            v.invalid(item, "must not contain NUL characters")
    return tuple(values)


def validated_address(
    v: Validator, namespace: Sequence[str], key: str, field: str = ""
) -> tuple[Namespace, str]:
    """A document's namespace and key (``{field}namespace``, ``{field}key``)."""
    found = labels(v, namespace, f"{field}namespace", required=True)
    v.max_chars(key, f"{field}key", MAX_KEY_CHARS)
    if "\x00" in key:
        v.invalid(f"{field}key", "must not contain NUL characters")
    return found, key


def value_of(v: Validator, value_json: str, field: str) -> dict[str, Any]:
    """The value: a JSON object of at most ``MAX_VALUE_BYTES``."""
    size = len(value_json.encode("utf-8", "surrogatepass"))
    if size > MAX_VALUE_BYTES:
        v.max_bytes(value_json, field, MAX_VALUE_BYTES)
        return {}
    try:
        value = loads_strict(value_json)
    except ValueError:
        v.invalid(field, "must be a JSON object")
        return {}
    if not isinstance(value, dict):
        v.invalid(field, "must be a JSON object")
        return {}
    return value


def _embedding(v: Validator, values: Sequence[float], field: str) -> tuple[float, ...] | None:
    if not values:
        return None
    v.max_items(len(values), field, MAX_DIMENSIONS)
    if not all(math.isfinite(x) for x in values):
        v.invalid(field, "must hold finite numbers")
    return tuple(values)


def index_of(
    v: Validator, request_has_index: bool, index: pb.DocumentIndex, field: str
) -> tuple[IndexedText, ...] | None:
    """The indexed texts (``None``: the whole value); embeddings on every
    text or none, all of one length."""
    if not request_has_index:
        return None
    v.max_items(len(index.texts), f"{field}.texts", MAX_INDEXED_TEXTS)
    texts: list[IndexedText] = []
    for i, text in enumerate(index.texts[: MAX_INDEXED_TEXTS + 1]):
        item = f"{field}.texts[{i}]"
        v.text(text.path, f"{item}.path", MAX_TEXT_BYTES)
        v.text(text.text, f"{item}.text", MAX_TEXT_BYTES)
        texts.append(
            IndexedText(text.path, text.text, _embedding(v, text.embedding, f"{item}.embedding"))
        )
    lengths = {len(t.embedding) if t.embedding else 0 for t in texts}
    if len(lengths) > 1:
        v.invalid(f"{field}.texts", "every text needs an embedding of the same length, or none")
    return tuple(texts)


def ttl_micros(v: Validator, has_ttl: bool, ttl: duration_pb2.Duration, field: str) -> int | None:
    """A positive duration of at most 100 years, in microseconds."""
    if not has_ttl:
        return None
    micros = ttl.seconds * 1_000_000 + ttl.nanos // 1000
    if micros <= 0 or ttl.seconds > MAX_TTL_SECONDS or ttl.nanos < 0:
        v.invalid(field, "must be a positive duration of at most 100 years")
        return None
    return micros


def _limit(v: Validator, value: int, field: str, default: int) -> int:
    if not 0 <= value <= MAX_LIMIT:
        v.invalid(field, f"must be between 0 and {MAX_LIMIT} (0: {default}); got {value}")
    return value or default


def _filters(v: Validator, values: Sequence[pb.DocumentFilter]) -> tuple[DocumentFilter, ...]:
    v.max_items(len(values), "filters", MAX_FILTERS)
    found: list[DocumentFilter] = []
    for i, item in enumerate(values[: MAX_FILTERS + 1]):
        at = f"filters[{i}]"
        if not item.field:
            v.invalid(f"{at}.field", "is required")
        v.max_chars(item.field, f"{at}.field", MAX_FIELD_CHARS)
        operator = _OPERATORS.get(item.operator)
        if operator is None:
            v.invalid(f"{at}.operator", "must be one of OPERATOR_EQ ... OPERATOR_LTE")
        v.max_bytes(item.value_json, f"{at}.value_json", MAX_TEXT_BYTES)
        try:
            operand = loads_strict(item.value_json)
        except ValueError:
            v.invalid(f"{at}.value_json", "must be a JSON value")
            continue
        if operator is not None:
            found.append(DocumentFilter(item.field, operator, operand))
    return tuple(found)


def search_query(v: Validator, request: pb.SearchDocumentsRequest, user_id: str) -> DocumentQuery:
    prefix = labels(v, request.namespace_prefix, "namespace_prefix", required=False)
    filters = _filters(v, request.filters)
    v.text(request.query, "query", MAX_TEXT_BYTES)
    vector = _embedding(v, request.query_embedding, "query_embedding")
    v.non_negative(request.offset, "offset")
    limit = _limit(v, request.limit, "limit", DEFAULT_SEARCH_LIMIT)
    return DocumentQuery(
        user_id=user_id,
        namespace_prefix=prefix,
        filters=filters,
        query=request.query,
        query_vector=vector,
        offset=max(request.offset, 0),
        limit=limit,
    )


def namespace_query(
    v: Validator, request: pb.ListDocumentNamespacesRequest, user_id: str
) -> NamespaceQuery:
    v.max_items(len(request.conditions), "conditions", MAX_CONDITIONS)
    conditions: list[NamespaceCondition] = []
    for i, condition in enumerate(request.conditions[: MAX_CONDITIONS + 1]):
        at = f"conditions[{i}]"
        if condition.side not in (
            pb.NamespaceCondition.SIDE_PREFIX,
            pb.NamespaceCondition.SIDE_SUFFIX,
        ):
            v.invalid(f"{at}.side", "must be SIDE_PREFIX or SIDE_SUFFIX")
        found = labels(v, condition.labels, f"{at}.labels", required=False)
        conditions.append(
            NamespaceCondition(found, suffix=condition.side == pb.NamespaceCondition.SIDE_SUFFIX)
        )
    v.non_negative(request.max_depth, "max_depth")
    v.non_negative(request.offset, "offset")
    limit = _limit(v, request.limit, "limit", DEFAULT_NAMESPACE_LIMIT)
    return NamespaceQuery(
        user_id=user_id,
        conditions=tuple(conditions),
        max_depth=request.max_depth if request.max_depth > 0 else None,
        offset=max(request.offset, 0),
        limit=limit,
    )
