"""Document calls (``mnemo.v1.DocumentService``): JSON values under a user,
addressed by a namespace (a tuple of labels) and a key, as LangGraph's
``BaseStore`` keeps them (``mnemo.integrations.langgraph.MnemoStore``).

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import duration_pb2

from mnemo.client._calls import Rpc, UnaryCall
from mnemo.client._names import user_name
from mnemo.client._request_ids import request_id_or_new
from mnemo.client.errors import FieldViolation, InvalidArgumentError
from mnemo.v1 import documents_pb2 as dc
from mnemo.v1.documents_pb2_grpc import DocumentServiceStub

__all__ = [
    "IndexedTextLike",
    "delete_document",
    "document_value",
    "filters_of",
    "get_document",
    "list_document_namespaces",
    "put_document",
    "search_documents",
]

#: One searchable text of a document: ``(path, text)`` or ``(path, text, embedding)``.
IndexedTextLike = tuple[str, str] | tuple[str, str, Sequence[float]]

_OPERATORS = {
    "$eq": dc.DocumentFilter.OPERATOR_EQ,
    "$ne": dc.DocumentFilter.OPERATOR_NE,
    "$gt": dc.DocumentFilter.OPERATOR_GT,
    "$gte": dc.DocumentFilter.OPERATOR_GTE,
    "$lt": dc.DocumentFilter.OPERATOR_LT,
    "$lte": dc.DocumentFilter.OPERATOR_LTE,
}


def rpc(method: str) -> Rpc:
    """The ``DocumentService`` RPC named ``method``."""
    return Rpc(DocumentServiceStub, method)


def document_value(document: dc.Document) -> dict[str, Any]:
    """The document's value, decoded."""
    value: dict[str, Any] = json.loads(document.value_json)
    return value


def _invalid(field: str, problem: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{field} {problem}",
        reason="INVALID_FIELD",
        metadata={"field": field},
        field_violations=[FieldViolation(field, problem)],
    )


def filters_of(filter: Mapping[str, Any] | None) -> list[dc.DocumentFilter]:
    """LangGraph's filter (``{"field": value}`` or ``{"field": {"$gt": 3}}``)
    as ``DocumentFilter`` messages; an unknown ``$`` operator is refused
    before sending."""
    found: list[dc.DocumentFilter] = []
    for field, condition in (filter or {}).items():
        if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
            for operator, operand in condition.items():
                if operator not in _OPERATORS:
                    raise _invalid(f"filter.{field}", f"has an unknown operator {operator!r}")
                found.append(
                    dc.DocumentFilter(
                        field=field, operator=_OPERATORS[operator], value_json=json.dumps(operand)
                    )
                )
        else:
            found.append(
                dc.DocumentFilter(
                    field=field,
                    operator=dc.DocumentFilter.OPERATOR_EQ,
                    value_json=json.dumps(condition),
                )
            )
    return found


def _index(texts: Sequence[IndexedTextLike]) -> dc.DocumentIndex:
    index = dc.DocumentIndex()
    for item in texts:
        path, text = item[0], item[1]
        embedding = item[2] if len(item) > 2 else ()
        index.texts.add(path=path, text=text, embedding=embedding)
    return index


def _ttl(seconds: float) -> duration_pb2.Duration:
    if not math.isfinite(seconds) or seconds <= 0:
        raise _invalid("ttl", "must be a positive number of seconds")
    whole = math.floor(seconds)
    return duration_pb2.Duration(seconds=whole, nanos=round((seconds - whole) * 1e9))


def _document(response: Any) -> dc.Document:
    document: dc.Document = response.document
    return document


def put_document(
    user: str,
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    *,
    index: Sequence[IndexedTextLike] | None = None,
    ttl: float | None = None,
    etag: str = "",
    request_id: str | None = None,
    timeout: float | None = None,
) -> UnaryCall[dc.PutDocumentRequest, dc.Document]:
    """Create the document at ``namespace`` / ``key`` or replace its value;
    returns it as stored (with its new ``etag``).

    ``index``: the texts a query searches, ``(path, text)`` or ``(path,
    text, embedding)`` each (every text with an embedding of one length, or
    none); ``None``: the whole value's text; ``()``: not searchable. ``ttl``:
    seconds after this write (or a refreshing read) when it expires.
    ``etag``: write only if it is still current. A fresh ``request_id`` is
    generated unless given, so a retried call writes once.

    Raises:
        InvalidArgumentError: an empty namespace or label, a value that is
            not a JSON object, sizes over the limits (``INVALID_FIELD``,
            ``FIELD_TOO_LARGE``).
        EtagMismatchError: ``etag`` is not current.
        FailedPreconditionError: consent withdrawn or memory switched off
            (``MEMORY_CONSENT_WITHDRAWN``, ``MEMORY_DISABLED``).
        RequestIdReusedError: ``request_id`` was used for a different request.
    """
    document = dc.Document(
        namespace=list(namespace),
        key=key,
        value_json=json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False),
        etag=etag,
    )
    if ttl is not None:
        document.ttl.CopyFrom(_ttl(ttl))
    request = dc.PutDocumentRequest(
        parent=user_name(user), document=document, request_id=request_id_or_new(request_id)
    )
    if index is not None:
        request.index.CopyFrom(_index(index))
    return UnaryCall(rpc("PutDocument"), request, _document, timeout)


def get_document(
    user: str,
    namespace: Sequence[str],
    key: str,
    *,
    refresh_ttl: bool = False,
    timeout: float | None = None,
) -> UnaryCall[dc.GetDocumentRequest, dc.Document]:
    """The document at ``namespace`` / ``key`` (``document_value`` decodes
    its value); ``refresh_ttl`` restarts its expiry.

    Raises:
        NotFoundError: no such document (or it expired).
        FailedPreconditionError: memory switched off (``MEMORY_DISABLED``).
    """
    request = dc.GetDocumentRequest(
        parent=user_name(user), namespace=list(namespace), key=key, refresh_ttl=refresh_ttl
    )
    return UnaryCall(rpc("GetDocument"), request, _document, timeout)


def delete_document(
    user: str,
    namespace: Sequence[str],
    key: str,
    *,
    etag: str = "",
    timeout: float | None = None,
) -> UnaryCall[dc.DeleteDocumentRequest, bool]:
    """Delete the document; whether there was one (deleting nothing succeeds).

    Raises:
        EtagMismatchError: ``etag`` is not current.
        FailedPreconditionError: consent withdrawn or memory switched off.
    """
    request = dc.DeleteDocumentRequest(
        parent=user_name(user), namespace=list(namespace), key=key, etag=etag
    )
    return UnaryCall(rpc("DeleteDocument"), request, lambda r: bool(r.deleted), timeout)


def search_documents(
    user: str,
    namespace_prefix: Sequence[str] = (),
    *,
    filter: Mapping[str, Any] | None = None,
    query: str = "",
    query_embedding: Sequence[float] | None = None,
    offset: int = 0,
    limit: int = 10,
    refresh_ttl: bool = False,
    timeout: float | None = None,
) -> UnaryCall[dc.SearchDocumentsRequest, list[dc.ScoredDocument]]:
    """The documents under ``namespace_prefix`` passing ``filter``
    (LangGraph's: ``{"field": value}``, or ``{"field": {"$gte": 3}}`` with
    ``$eq $ne $gt $gte $lt $lte``), best first: by ``query_embedding``
    (cosine to the texts' embeddings) when given, else by Mnemo's lexical
    ranking of ``query``, else most recently updated first. Each result has
    a ``score`` unless there was no query or the document is not indexed.

    Raises:
        InvalidArgumentError: an unknown operator, ``limit`` over 1000.
        FailedPreconditionError: memory switched off (``MEMORY_DISABLED``).
    """
    request = dc.SearchDocumentsRequest(
        parent=user_name(user),
        namespace_prefix=list(namespace_prefix),
        filters=filters_of(filter),
        query=query,
        query_embedding=query_embedding or (),
        offset=offset,
        limit=limit,
        refresh_ttl=refresh_ttl,
    )
    return UnaryCall(rpc("SearchDocuments"), request, lambda r: list(r.results), timeout)


def list_document_namespaces(
    user: str,
    *,
    prefix: Sequence[str] | None = None,
    suffix: Sequence[str] | None = None,
    max_depth: int | None = None,
    offset: int = 0,
    limit: int = 100,
    timeout: float | None = None,
) -> UnaryCall[dc.ListDocumentNamespacesRequest, list[tuple[str, ...]]]:
    """The distinct namespaces of the user's documents, sorted, that start
    with ``prefix`` and end with ``suffix`` (``"*"`` matches any label),
    cut to ``max_depth`` labels.

    Raises:
        InvalidArgumentError: ``limit`` over 1000, an empty label.
        FailedPreconditionError: memory switched off (``MEMORY_DISABLED``).
    """
    side = dc.NamespaceCondition
    conditions = [
        side(side=which, labels=list(labels))
        for which, labels in ((side.SIDE_PREFIX, prefix), (side.SIDE_SUFFIX, suffix))
        if labels is not None
    ]
    request = dc.ListDocumentNamespacesRequest(
        parent=user_name(user),
        conditions=conditions,
        max_depth=max_depth or 0,
        offset=offset,
        limit=limit,
    )
    return UnaryCall(
        rpc("ListDocumentNamespaces"),
        request,
        lambda r: [tuple(n.labels) for n in r.namespaces],
        timeout,
    )
