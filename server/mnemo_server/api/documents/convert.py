"""Documents -> protos, and back (ExportUserData / ImportUserData, the
change feed). Pure functions over validated input."""

from __future__ import annotations

import json

from google.protobuf import duration_pb2

from mnemo.v1 import documents_pb2 as pb
from mnemo_server.api.convert import set_timestamp
from mnemo_server.domain.documents import Document, IndexedText, ScoredDocument

__all__ = ["document_to_proto", "scored_to_proto", "value_json"]


def value_json(document: Document) -> str:
    return json.dumps(document.value, ensure_ascii=False, separators=(",", ":"))


def _index_to_proto(index: tuple[IndexedText, ...], target: pb.DocumentIndex) -> None:
    target.SetInParent()
    for text in index:
        target.texts.add(path=text.path, text=text.text, embedding=text.embedding or ())


def document_to_proto(document: Document, *, with_index: bool = False) -> pb.Document:
    """The document (with its index when ``with_index``: export, the feed)."""
    found = pb.Document(
        name=document.name,
        namespace=document.namespace,
        key=document.key,
        value_json=value_json(document),
        etag=document.etag,
    )
    set_timestamp(found.create_time, document.create_time)
    set_timestamp(found.update_time, document.update_time)
    if document.expire_time is not None:
        set_timestamp(found.expire_time, document.expire_time)
    if document.ttl_micros is not None:
        seconds, micros = divmod(document.ttl_micros, 1_000_000)
        found.ttl.CopyFrom(duration_pb2.Duration(seconds=seconds, nanos=micros * 1000))
    if with_index and document.index is not None:
        _index_to_proto(document.index, found.index)
    return found


def scored_to_proto(scored: ScoredDocument) -> pb.ScoredDocument:
    found = pb.ScoredDocument(document=document_to_proto(scored.document))
    if scored.score is not None:
        found.score = scored.score
    return found
