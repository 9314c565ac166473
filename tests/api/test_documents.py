"""DocumentService through a real server: put / get / delete / search /
namespaces, errors with their reasons and field violations, the memory gate,
the change feed and expiry."""

from __future__ import annotations

import json
import time
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2

from mnemo.v1 import documents_pb2 as dc
from mnemo.v1 import documents_pb2_grpc, governance_pb2_grpc, sync_pb2_grpc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import sync_pb2 as sy
from tests.api.governance import WITHDRAWN, set_consent, switch
from tests.support.rpc_errors import rpc_failure

Stub = documents_pb2_grpc.DocumentServiceStub
USER = "users/u1"


@pytest.fixture
def documents(channel: grpc.Channel) -> Stub:
    return documents_pb2_grpc.DocumentServiceStub(channel)


def put(
    stub: Stub, namespace: tuple[str, ...], key: str, value: dict[str, Any], **fields: Any
) -> dc.Document:
    index = fields.pop("index", None)
    request = dc.PutDocumentRequest(
        parent=fields.pop("parent", USER),
        document=dc.Document(namespace=namespace, key=key, value_json=json.dumps(value), **fields),
    )
    if index is not None:
        request.index.CopyFrom(index)
    document: dc.Document = stub.PutDocument(request).document
    return document


def get(stub: Stub, namespace: tuple[str, ...], key: str) -> dc.Document:
    document: dc.Document = stub.GetDocument(
        dc.GetDocumentRequest(parent=USER, namespace=namespace, key=key)
    ).document
    return document


def search(stub: Stub, **fields: Any) -> list[tuple[str, float | None]]:
    response = stub.SearchDocuments(dc.SearchDocumentsRequest(parent=USER, **fields))
    return [(r.document.key, r.score if r.HasField("score") else None) for r in response.results]


def test_put_get_replace_delete(documents: Stub) -> None:
    first = put(documents, ("prefs", "ui"), "theme", {"mode": "dark", "size": 3})
    assert first.name.startswith("users/u1/documents/") and first.etag
    assert json.loads(first.value_json) == {"mode": "dark", "size": 3}
    assert not first.HasField("expire_time")
    assert get(documents, ("prefs", "ui"), "theme") == first

    second = put(documents, ("prefs", "ui"), "theme", {"mode": "light"}, etag=first.etag)
    assert second.name == first.name and second.etag != first.etag
    assert second.create_time == first.create_time
    failure = rpc_failure(
        documents.PutDocument,
        dc.PutDocumentRequest(
            parent=USER,
            document=dc.Document(
                namespace=["prefs", "ui"], key="theme", value_json="{}", etag=first.etag
            ),
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")

    deleted = documents.DeleteDocument(
        dc.DeleteDocumentRequest(parent=USER, namespace=["prefs", "ui"], key="theme")
    )
    assert deleted.deleted and deleted.change_cursor > 0
    again = documents.DeleteDocument(
        dc.DeleteDocumentRequest(parent=USER, namespace=["prefs", "ui"], key="theme")
    )
    assert (again.deleted, again.change_cursor) == (False, 0)
    failure = rpc_failure(
        documents.GetDocument,
        dc.GetDocumentRequest(parent=USER, namespace=["prefs", "ui"], key="theme"),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_FOUND")


def test_search_by_prefix_filters_and_pages(documents: Stub) -> None:
    for ns in (("a",), ("a", "b"), ("ab",), ("a", "%_")):
        for i in range(3):
            put(documents, ns, f"k{i}", {"i": i, "even": i % 2 == 0, "tag": {"x": i}})
    under_a = search(documents, namespace_prefix=["a"], limit=100)
    assert len(under_a) == 9
    paged = [
        hit
        for offset in range(0, 9, 2)
        for hit in search(documents, namespace_prefix=["a"], limit=2, offset=offset)
    ]
    assert paged == under_a
    assert len(search(documents, namespace_prefix=["a", "%_"], limit=100)) == 3
    assert len(search(documents, limit=100)) == 12

    def where(field: str, op: Any, value: Any) -> list[str]:
        found = documents.SearchDocuments(
            dc.SearchDocumentsRequest(
                parent=USER,
                namespace_prefix=["ab"],
                filters=[dc.DocumentFilter(field=field, operator=op, value_json=json.dumps(value))],
            )
        )
        return sorted(r.document.key for r in found.results)

    f = dc.DocumentFilter
    assert where("even", f.OPERATOR_EQ, True) == ["k0", "k2"]
    assert where("even", f.OPERATOR_NE, True) == ["k1"]
    assert where("i", f.OPERATOR_GT, 0) == ["k1", "k2"]
    assert where("i", f.OPERATOR_GTE, 1) == ["k1", "k2"]
    assert where("i", f.OPERATOR_LT, 1) == ["k0"]
    assert where("i", f.OPERATOR_LTE, 1.5) == ["k0", "k1"]
    assert where("tag", f.OPERATOR_EQ, {"x": 2}) == ["k2"]
    assert where("even", f.OPERATOR_GT, 0) == []  # a boolean is not a number


def test_query_ranks_lexically_and_by_embedding(documents: Stub) -> None:
    ns = ("notes",)
    put(documents, ns, "tea", {"text": "green tea every morning"})
    put(documents, ns, "trip", {"text": "a trip to Lisbon", "extra": "tea"})
    put(documents, ns, "none", {"text": "nothing here"})
    unindexed = dc.DocumentIndex()
    put(documents, ns, "hidden", {"text": "green tea too"}, index=unindexed)
    hits = search(documents, namespace_prefix=ns, query="green tea")
    assert [k for k, _ in hits] == ["tea", "trip", "none", "hidden"]
    scores = [s for _, s in hits]
    assert scores[0] == pytest.approx(1.0) and 0 < scores[1] < 1  # type: ignore[operator]
    assert scores[2:] == [0.0, None]

    only_text = dc.DocumentIndex(texts=[dc.IndexedText(path="text", text="a trip to Lisbon")])
    put(documents, ns, "trip", {"text": "a trip to Lisbon", "extra": "tea"}, index=only_text)
    assert dict(search(documents, namespace_prefix=ns, query="tea"))["trip"] == 0.0

    def vectors(*embeddings: list[float]) -> dc.DocumentIndex:
        return dc.DocumentIndex(
            texts=[
                dc.IndexedText(path=f"p{i}", text="t", embedding=e)
                for i, e in enumerate(embeddings)
            ]
        )

    put(documents, ("v",), "x", {}, index=vectors([1.0, 0.0], [0.0, 1.0]))
    put(documents, ("v",), "y", {}, index=vectors([0.6, 0.8]))
    put(documents, ("v",), "z", {}, index=dc.DocumentIndex())
    hits = search(documents, namespace_prefix=["v"], query_embedding=[0.0, 1.0])
    assert [k for k, _ in hits] == ["x", "y", "z"]
    assert [s for _, s in hits] == [pytest.approx(1.0), pytest.approx(0.8), None]


def test_list_namespaces_with_conditions_depth_and_pages(documents: Stub) -> None:
    for ns in (("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")):
        put(documents, ns, "k", {"v": 1})

    def listed(**fields: Any) -> list[tuple[str, ...]]:
        response = documents.ListDocumentNamespaces(
            dc.ListDocumentNamespacesRequest(parent=USER, **fields)
        )
        return [tuple(n.labels) for n in response.namespaces]

    side = dc.NamespaceCondition
    assert listed() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]
    assert listed(conditions=[side(side=side.SIDE_PREFIX, labels=["a", "b"])]) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
    ]
    assert listed(conditions=[side(side=side.SIDE_SUFFIX, labels=["*", "c"])]) == [
        ("a", "b", "c"),
        ("z", "b", "c"),
    ]
    assert listed(conditions=[side(side=side.SIDE_PREFIX, labels=["*", "b"])], max_depth=2) == [
        ("a", "b"),
        ("z", "b"),
    ]
    assert listed(max_depth=1, offset=1, limit=1) == [("z",)]


def test_invalid_requests_name_every_field(documents: Stub) -> None:
    failure = rpc_failure(
        documents.PutDocument,
        dc.PutDocumentRequest(
            parent="users/u1",
            document=dc.Document(
                namespace=["ok", ""],
                key="k",
                value_json="[1]",
                ttl=duration_pb2.Duration(seconds=-1),
            ),
        ),
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    assert failure.fields == ("document.namespace[1]", "document.value_json", "document.ttl")

    failure = rpc_failure(
        documents.GetDocument, dc.GetDocumentRequest(parent="u1", namespace=["a"], key="k")
    )
    assert (failure.reason, failure.fields) == ("INVALID_NAME", ("parent",))

    failure = rpc_failure(
        documents.SearchDocuments,
        dc.SearchDocumentsRequest(
            parent=USER,
            filters=[dc.DocumentFilter(field="x", value_json="{")],
            limit=5000,
        ),
    )
    assert failure.reason == "INVALID_FIELD"
    assert failure.fields == ("filters[0].operator", "filters[0].value_json", "limit")

    failure = rpc_failure(
        documents.PutDocument,
        dc.PutDocumentRequest(
            parent=USER,
            document=dc.Document(namespace=["a"], key="k", value_json="x" * 1_048_577),
        ),
    )
    assert (failure.reason, failure.fields) == ("FIELD_TOO_LARGE", ("document.value_json",))

    mixed = dc.DocumentIndex(
        texts=[dc.IndexedText(text="a", embedding=[1.0]), dc.IndexedText(text="b")]
    )
    failure = rpc_failure(
        documents.PutDocument,
        dc.PutDocumentRequest(
            parent=USER,
            document=dc.Document(namespace=["a"], key="k", value_json="{}"),
            index=mixed,
        ),
    )
    assert (failure.reason, failure.fields) == ("INVALID_FIELD", ("index.texts",))


def test_writes_pass_the_memory_gate(channel: grpc.Channel, documents: Stub) -> None:
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    put(documents, ("a",), "k", {"v": 1})
    switch(governance, USER, enabled=False)
    failure = rpc_failure(
        documents.PutDocument,
        dc.PutDocumentRequest(
            parent=USER, document=dc.Document(namespace=["a"], key="k", value_json="{}")
        ),
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "MEMORY_DISABLED",
    )
    failure = rpc_failure(
        documents.GetDocument, dc.GetDocumentRequest(parent=USER, namespace=["a"], key="k")
    )
    assert failure.reason == "MEMORY_DISABLED"
    switch(governance, USER, enabled=True)
    set_consent(governance, USER, WITHDRAWN)
    failure = rpc_failure(
        documents.DeleteDocument, dc.DeleteDocumentRequest(parent=USER, namespace=["a"], key="k")
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "MEMORY_CONSENT_WITHDRAWN",
    )
    assert json.loads(get(documents, ("a",), "k").value_json) == {"v": 1}


def test_the_change_feed_carries_documents(channel: grpc.Channel, documents: Stub) -> None:
    sync = sync_pb2_grpc.SyncServiceStub(channel)
    written = put(documents, ("a",), "k", {"secret": "s1"})
    documents.DeleteDocument(dc.DeleteDocumentRequest(parent=USER, namespace=["a"], key="k"))
    changes = sync.ListChanges(sy.ListChangesRequest(parent=USER)).changes
    mine = [c for c in changes if c.resource_name == written.name]
    assert [c.operation for c in mine] == [sy.CHANGE_OPERATION_UPSERT, sy.CHANGE_OPERATION_DELETE]
    # The delete strips the value from the earlier change and carries none itself.
    assert not mine[0].HasField("document")
    assert mine[1].document.name == written.name and mine[1].document.value_json == "{}"
    assert list(mine[1].document.namespace) == ["a"] and mine[1].document.key == "k"


def test_put_with_a_request_id_is_idempotent(documents: Stub) -> None:
    request = dc.PutDocumentRequest(
        parent=USER,
        document=dc.Document(namespace=["a"], key="k", value_json='{"v": 1}'),
        request_id="r1",
    )
    first = documents.PutDocument(request)
    retry = documents.PutDocument(request)
    assert retry == first
    request.document.value_json = '{"v": 2}'
    failure = rpc_failure(documents.PutDocument, request)
    assert failure.reason == "REQUEST_ID_REUSED"


def test_an_expired_document_is_gone(documents: Stub) -> None:
    ttl = duration_pb2.Duration(nanos=200_000_000)
    kept = put(documents, ("a",), "kept", {"v": 1}, ttl=duration_pb2.Duration(seconds=3600))
    assert kept.HasField("expire_time") and kept.ttl.seconds == 3600
    put(documents, ("a",), "brief", {"v": 1}, ttl=ttl)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(search(documents, namespace_prefix=["a"])) > 1:
        time.sleep(0.05)
    assert [k for k, _ in search(documents, namespace_prefix=["a"])] == ["kept"]
    failure = rpc_failure(
        documents.GetDocument, dc.GetDocumentRequest(parent=USER, namespace=["a"], key="brief")
    )
    assert failure.code == grpc.StatusCode.NOT_FOUND
    refreshed = documents.GetDocument(
        dc.GetDocumentRequest(parent=USER, namespace=["a"], key="kept", refresh_ttl=True)
    )
    assert refreshed.document.key == "kept"
    assert get(documents, ("a",), "kept").expire_time.ToMicroseconds() > (
        kept.expire_time.ToMicroseconds()
    )


def test_erasure_removes_documents(channel: grpc.Channel, documents: Stub) -> None:
    governance = governance_pb2_grpc.GovernanceServiceStub(channel)
    put(documents, ("a",), "k", {"v": 1})
    governance.DeleteUserData(gv.DeleteUserDataRequest(parent=USER))
    assert search(documents) == []
