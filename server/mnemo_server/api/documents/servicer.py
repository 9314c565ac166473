"""DocumentService: validate (``api.documents.requests``), build the command
or call the read, convert the result (``api.documents.convert``).

Reads that ask to ``refresh_ttl`` restart the expiry of what they return
with one ``RefreshDocuments`` write after the read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from mnemo.v1 import documents_pb2 as pb
from mnemo.v1 import documents_pb2_grpc as pb_grpc
from mnemo_server.api import convert as shared
from mnemo_server.api.documents import requests
from mnemo_server.api.documents.convert import document_to_proto, scored_to_proto
from mnemo_server.api.idempotency import idempotency_of
from mnemo_server.api.validation import Validator, user_of
from mnemo_server.auth.caller import CallScope, caller_of, current_scope
from mnemo_server.domain.commands.documents import DeleteDocument, PutDocument, RefreshDocuments
from mnemo_server.domain.documents import Document, document_id
from mnemo_server.domain.usecases.documents import Documents
from mnemo_server.domain.usecases.writes import Writes

Context = grpc.aio.ServicerContext[Any, Any]


class DocumentServicer(pb_grpc.DocumentServiceServicer):
    """LangGraph-style JSON documents over gRPC."""

    def __init__(self, documents: Documents, writes: Writes) -> None:
        self._documents = documents
        self._writes = writes

    async def _refresh(
        self, scope: CallScope | None, user_id: str, found: Sequence[Document]
    ) -> None:
        ids = tuple(document_id(d.namespace, d.key) for d in found if d.ttl_micros is not None)
        if ids:
            await self._writes(
                RefreshDocuments(caller=caller_of(scope), user_id=user_id, document_ids=ids)
            )

    async def GetDocument(
        self, request: pb.GetDocumentRequest, context: Context
    ) -> pb.GetDocumentResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        namespace, key = requests.validated_address(v, request.namespace, request.key)
        v.raise_if_invalid()
        found = await self._documents.get(user_id, namespace, key)
        if request.refresh_ttl:
            await self._refresh(scope, user_id, [found])
        return pb.GetDocumentResponse(document=document_to_proto(found))

    async def PutDocument(
        self, request: pb.PutDocumentRequest, context: Context
    ) -> pb.PutDocumentResponse:
        scope = current_scope()
        document = request.document
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        namespace, key = requests.validated_address(
            v, document.namespace, document.key, "document."
        )
        value = requests.value_of(v, document.value_json, "document.value_json")
        index = requests.index_of(v, request.HasField("index"), request.index, "index")
        ttl = requests.ttl_micros(v, document.HasField("ttl"), document.ttl, "document.ttl")
        v.identifier(request.request_id, "request_id")
        v.raise_if_invalid()
        written = await self._writes(
            PutDocument(
                caller=caller_of(scope),
                user_id=user_id,
                namespace=namespace,
                key=key,
                value=value,
                value_json=document.value_json,
                index=index,
                ttl_micros=ttl,
                expected_etag=shared.expected_etag(document.etag),
                idempotency=idempotency_of(request, "PutDocument"),
            )
        )
        return pb.PutDocumentResponse(
            document=document_to_proto(written.value), change_cursor=written.change_cursor
        )

    async def DeleteDocument(
        self, request: pb.DeleteDocumentRequest, context: Context
    ) -> pb.DeleteDocumentResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        namespace, key = requests.validated_address(v, request.namespace, request.key)
        v.raise_if_invalid()
        written = await self._writes(
            DeleteDocument(
                caller=caller_of(scope),
                user_id=user_id,
                namespace=namespace,
                key=key,
                expected_etag=shared.expected_etag(request.etag),
            )
        )
        return pb.DeleteDocumentResponse(deleted=written.value, change_cursor=written.change_cursor)

    async def SearchDocuments(
        self, request: pb.SearchDocumentsRequest, context: Context
    ) -> pb.SearchDocumentsResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        query = requests.search_query(v, request, user_id)
        v.raise_if_invalid()
        found = await self._documents.search(query)
        if request.refresh_ttl:
            await self._refresh(scope, user_id, [s.document for s in found])
        return pb.SearchDocumentsResponse(results=[scored_to_proto(s) for s in found])

    async def ListDocumentNamespaces(
        self, request: pb.ListDocumentNamespacesRequest, context: Context
    ) -> pb.ListDocumentNamespacesResponse:
        scope = current_scope()
        v = Validator()
        user_id = user_of(v, request.parent, "parent", scope)
        query = requests.namespace_query(v, request, user_id)
        v.raise_if_invalid()
        found = await self._documents.namespaces(query)
        return pb.ListDocumentNamespacesResponse(
            namespaces=[pb.DocumentNamespace(labels=n) for n in found]
        )
