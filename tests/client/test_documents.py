"""The document methods of both clients against a real server."""

from __future__ import annotations

import pytest

from mnemo.client import (
    EtagMismatchError,
    InvalidArgumentError,
    MnemoClient,
    NotFoundError,
    document_value,
)
from mnemo.client import _documents as documents


def test_put_get_search_list_delete(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    first = client.put_document(user, ("prefs", "ui"), "theme", {"mode": "dark", "n": 3})
    assert document_value(other_client.get_document(user, ["prefs", "ui"], "theme")) == {
        "mode": "dark",
        "n": 3,
    }
    with pytest.raises(EtagMismatchError):
        client.put_document(user, ("prefs", "ui"), "theme", {}, etag="stale")
    client.put_document(user, ("prefs", "ui"), "font", {"n": 5}, ttl=3600)
    client.put_document(
        user, ("prefs",), "x", {"text": "a vector"}, index=[("text", "v", [1.0, 0.0])]
    )
    found = client.search_documents(user, ("prefs", "ui"), filter={"n": {"$gte": 4}})
    assert [r.document.key for r in found] == ["font"]
    assert found[0].document.HasField("expire_time")
    ranked = client.search_documents(user, ("prefs",), query_embedding=[1.0, 0.0])
    assert [r.document.key for r in ranked][0] == "x" and ranked[0].score == pytest.approx(1.0)
    assert other_client.list_document_namespaces(user, prefix=["prefs"]) == [
        ("prefs",),
        ("prefs", "ui"),
    ]
    assert client.list_document_namespaces(user, suffix=["ui"], max_depth=1) == [("prefs",)]
    with pytest.raises(EtagMismatchError):
        client.delete_document(user, ("prefs", "ui"), "theme", etag=first.etag + "x")
    assert client.delete_document(user, ("prefs", "ui"), "theme", etag=first.etag) is True
    with pytest.raises(NotFoundError):
        client.get_document(user, ("prefs", "ui"), "theme")
    assert client.delete_document(user, ("prefs", "ui"), "theme") is False


def test_requests_are_built_before_sending() -> None:
    call = documents.put_document("u1", ("a",), "k", {"v": 1})
    assert call.request.request_id and not call.request.HasField("index")
    assert call.request.document.value_json == '{"v":1}'
    assert documents.put_document("u1", ("a",), "k", {}, index=()).request.HasField("index")
    with pytest.raises(InvalidArgumentError):
        documents.search_documents("u1", filter={"n": {"$in": [1]}})
    with pytest.raises(InvalidArgumentError):
        documents.put_document("u1", ("a",), "k", {}, ttl=0)
    eq, gt = documents.filters_of({"tag": {"x": 1}, "n": {"$gt": 2}})
    assert (eq.field, eq.value_json, gt.value_json) == ("tag", '{"x": 1}', "2")
