"""Rows of ``documents`` <-> ``domain.documents.Document``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import quote

from mnemo_server.domain.documents import Document, IndexedText, Namespace, document_id
from mnemo_server.domain.vectors import decode_vector, encode_vector
from mnemo_server.store.rows import to_datetime, to_micros
from mnemo_server.store.schema import documents

__all__ = [
    "COLUMNS",
    "document",
    "index_columns",
    "namespace_of",
    "namespace_path",
    "slim",
    "values",
]

COLUMNS = tuple(c for c in documents.c if c.name != "id")


def namespace_path(labels: Namespace) -> str:
    """The string a namespace prefix is a prefix of (``store.schema``)."""
    return "".join(quote(label, safe="") + "/" for label in labels)


def namespace_of(namespace_json: str) -> Namespace:
    return tuple(json.loads(namespace_json))


def index_columns(index: tuple[IndexedText, ...] | None) -> dict[str, Any]:
    """``index_json``, ``embedding_dims`` and ``embeddings`` of an index."""
    if index is None:
        return {"index_json": None, "embedding_dims": None, "embeddings": None}
    embedded = [t.embedding for t in index if t.embedding is not None]
    return {
        "index_json": json.dumps([[t.path, t.text] for t in index], ensure_ascii=False),
        "embedding_dims": len(embedded[0]) if embedded else None,
        "embeddings": b"".join(encode_vector(e) for e in embedded) if embedded else None,
    }


def _index(row: Any) -> tuple[IndexedText, ...] | None:
    if row.index_json is None:
        return None
    texts = json.loads(row.index_json)
    if not row.embedding_dims or row.embeddings is None:
        return tuple(IndexedText(path, text) for path, text in texts)
    flat = decode_vector(bytes(row.embeddings))
    dims = row.embedding_dims
    return tuple(
        IndexedText(path, text, flat[i * dims : (i + 1) * dims])
        for i, (path, text) in enumerate(texts)
    )


def document(row: Any) -> Document:
    """The document of a row of ``COLUMNS``."""
    return Document(
        user_id=row.user_id,
        namespace=namespace_of(row.namespace_json),
        key=row.key,
        value=json.loads(row.value_json),
        etag=row.etag,
        create_time=to_datetime(row.created_at),
        update_time=to_datetime(row.updated_at),
        expire_time=None if row.expire_at is None else to_datetime(row.expire_at),
        ttl_micros=row.ttl_micros,
        index=_index(row),
    )


def values(document: Document) -> dict[str, Any]:
    """The row of ``document`` (an import)."""
    return {
        "user_id": document.user_id,
        "document_id": document_id(document.namespace, document.key),
        "namespace_path": namespace_path(document.namespace),
        "namespace_json": json.dumps(list(document.namespace), ensure_ascii=False),
        "key": document.key,
        "value_json": json.dumps(document.value, ensure_ascii=False, separators=(",", ":")),
        **index_columns(document.index),
        "etag": document.etag,
        "created_at": to_micros(document.create_time),
        "updated_at": to_micros(document.update_time),
        "ttl_micros": document.ttl_micros,
        "expire_at": None if document.expire_time is None else to_micros(document.expire_time),
    }


def slim(document: Document) -> Document:
    """The document as the change feed keeps it: without embeddings."""
    if document.index is None or not any(t.embedding for t in document.index):
        return document
    index = tuple(dataclasses.replace(t, embedding=None) for t in document.index)
    return dataclasses.replace(document, index=index)
