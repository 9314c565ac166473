"""The ``document`` record of ImportUserData: an exported ``Document`` ->
``domain.documents.Document``, checked like a PutDocument plus what an
export carries (the name, which must be the one the address derives, the
etag and the times)."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.v1 import documents_pb2 as pb
from mnemo_server.api import convert
from mnemo_server.api.documents import requests
from mnemo_server.api.validation import Validator
from mnemo_server.domain.documents import Document, document_name

__all__ = ["document"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_ETAG_CHARS = 32


def _time(v: Validator, value: pb.Document, name: str, prefix: str) -> datetime | None:
    if not value.HasField(name):
        return None
    v.timestamp(getattr(value, name), f"{prefix}.{name}")
    return convert.from_timestamp(getattr(value, name))


def document(v: Validator, user_id: str, value: pb.Document, prefix: str) -> Document:
    """The record's document of ``user_id`` (problems go to ``v``)."""
    namespace, key = requests.validated_address(v, value.namespace, value.key, f"{prefix}.")
    if value.name != document_name(user_id, namespace, key):
        v.invalid(f"{prefix}.name", "must be the name the namespace and key derive")
    body = requests.value_of(v, value.value_json, f"{prefix}.value_json")
    index = requests.index_of(v, value.HasField("index"), value.index, f"{prefix}.index")
    ttl = requests.ttl_micros(v, value.HasField("ttl"), value.ttl, f"{prefix}.ttl")
    v.identifier(value.etag, f"{prefix}.etag")
    v.max_chars(value.etag, f"{prefix}.etag", MAX_ETAG_CHARS)
    create_time = _time(v, value, "create_time", prefix)
    update_time = _time(v, value, "update_time", prefix)
    if create_time is None or update_time is None:
        v.invalid(f"{prefix}.update_time", "create_time and update_time are required")
    return Document(
        user_id=user_id,
        namespace=namespace,
        key=key,
        value=body,
        etag=value.etag,
        create_time=create_time or _EPOCH,
        update_time=update_time or _EPOCH,
        expire_time=_time(v, value, "expire_time", prefix),
        ttl_micros=ttl,
        index=index,
    )
