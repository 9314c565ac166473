"""Documents conformance (DocumentStore and the document commands), on every
backend (on PostgreSQL under the sharding audit)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mnemo_server.domain.commands.documents import DeleteDocument, PutDocument, RefreshDocuments
from mnemo_server.domain.commands.governance import UpdateMemorySettings
from mnemo_server.domain.documents import (
    Document,
    DocumentFilter,
    DocumentQuery,
    FilterOperator,
    IndexedText,
    NamespaceCondition,
    NamespaceQuery,
    document_id,
)
from mnemo_server.domain.errors import Aborted, FailedPrecondition
from mnemo_server.store.composed import SqlStore

USER = "alice"


async def put(
    store: SqlStore, namespace: tuple[str, ...], key: str, value: dict[str, Any], **fields: Any
) -> Document:
    written = await store.execute(
        PutDocument(
            caller=None,
            user_id=fields.pop("user_id", USER),
            namespace=namespace,
            key=key,
            value=value,
            value_json=json.dumps(value),
            **fields,
        )
    )
    return written.value


async def keys(store: SqlStore, **fields: Any) -> list[str]:
    found = await store.documents.search_documents(DocumentQuery(user_id=USER, **fields))
    return [f"{'/'.join(s.document.namespace)}:{s.document.key}" for s in found]


async def test_put_get_replace_delete(sql_store: SqlStore) -> None:
    first = await put(sql_store, ("a", "b"), "k", {"v": 1})
    assert await sql_store.documents.get_document(USER, ("a", "b"), "k") == first
    assert await sql_store.documents.get_document(USER, ("a",), "k") is None
    assert await sql_store.documents.get_document("bob", ("a", "b"), "k") is None
    second = await put(sql_store, ("a", "b"), "k", {"v": 2}, expected_etag=first.etag)
    assert (second.create_time, second.value) == (first.create_time, {"v": 2})
    with pytest.raises(Aborted):
        await put(sql_store, ("a", "b"), "k", {"v": 3}, expected_etag=first.etag)
    gone = await sql_store.execute(
        DeleteDocument(caller=None, user_id=USER, namespace=("a", "b"), key="k")
    )
    assert gone.value and gone.change_cursor > 0
    again = await sql_store.execute(
        DeleteDocument(caller=None, user_id=USER, namespace=("a", "b"), key="k")
    )
    assert (again.value, again.change_cursor) == (False, 0)
    assert await sql_store.documents.get_document(USER, ("a", "b"), "k") is None


async def test_prefixes_are_label_prefixes_and_escape_like_wildcards(sql_store: SqlStore) -> None:
    for ns in (("a",), ("a", "b"), ("ab",), ("a", "%_"), ("a", "x/y"), ("a", "x")):
        await put(sql_store, ns, "k", {})
    assert sorted(await keys(sql_store, namespace_prefix=("a",), limit=100)) == [
        "a/%_:k",
        "a/b:k",
        "a/x/y:k",
        "a/x:k",
        "a:k",
    ]
    assert await keys(sql_store, namespace_prefix=("a", "%_")) == ["a/%_:k"]
    assert await keys(sql_store, namespace_prefix=("a", "x")) == ["a/x:k"]
    assert len(await keys(sql_store, limit=100)) == 6
    found = await sql_store.documents.list_document_namespaces(
        NamespaceQuery(user_id=USER, conditions=(NamespaceCondition(("a", "*")),), max_depth=2)
    )
    assert found == [("a", "%_"), ("a", "b"), ("a", "x"), ("a", "x/y")]


async def test_filters_ranking_and_pages(sql_store: SqlStore) -> None:
    for i in range(6):
        await put(sql_store, ("n",), f"k{i}", {"i": i, "text": "tea" if i % 2 else "coffee"})
    newest_first = await keys(sql_store, limit=100)
    assert newest_first == [f"n:k{i}" for i in reversed(range(6))]
    pages = [k for o in (0, 2, 4) for k in await keys(sql_store, offset=o, limit=2)]
    assert pages == newest_first
    over = DocumentFilter("i", FilterOperator.GTE, 3)
    assert await keys(sql_store, filters=(over,)) == ["n:k5", "n:k4", "n:k3"]
    ranked = await sql_store.documents.search_documents(
        DocumentQuery(user_id=USER, query="tea", limit=6)
    )
    assert [s.document.key for s in ranked[:3]] == ["k5", "k3", "k1"]
    assert [s.score for s in ranked] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    vector = (IndexedText("text", "t", (1.0, 0.0)), IndexedText("x", "u", (0.0, 1.0)))
    await put(sql_store, ("v",), "x", {}, index=vector)
    await put(sql_store, ("v",), "none", {}, index=())
    hits = await sql_store.documents.search_documents(
        DocumentQuery(user_id=USER, namespace_prefix=("v",), query_vector=(0.0, 2.0))
    )
    assert [(s.document.key, s.score) for s in hits] == [("x", pytest.approx(1.0)), ("none", None)]
    assert hits[0].document.index == vector


async def test_expired_documents_are_absent_refreshed_and_purged(sql_store: SqlStore) -> None:
    await put(sql_store, ("t",), "brief", {"v": 1}, ttl_micros=1)
    kept = await put(sql_store, ("t",), "kept", {"v": 1}, ttl_micros=3_600_000_000)
    await asyncio.sleep(0.01)
    assert await sql_store.documents.get_document(USER, ("t",), "brief") is None
    assert await keys(sql_store) == ["t:kept"]
    refreshed = await sql_store.execute(
        RefreshDocuments(
            caller=None,
            user_id=USER,
            document_ids=(document_id(("t",), "kept"), document_id(("t",), "brief")),
        )
    )
    assert refreshed.value == 1
    after = await sql_store.documents.get_document(USER, ("t",), "kept")
    assert after is not None and after.expire_time is not None and kept.expire_time is not None
    assert after.expire_time > kept.expire_time
    assert await sql_store.documents.purge_expired_documents(limit=10) == 1
    assert await sql_store.documents.purge_expired_documents(limit=10) == 0
    # A put over an expired document starts a new one.
    await put(sql_store, ("t",), "brief2", {"v": 1}, ttl_micros=1)
    await asyncio.sleep(0.01)
    again = await put(sql_store, ("t",), "brief2", {"v": 2})
    assert again.expire_time is None


async def test_writes_pass_the_memory_gate(sql_store: SqlStore) -> None:
    await put(sql_store, ("a",), "k", {"v": 1})
    await sql_store.execute(UpdateMemorySettings(caller=None, user_id=USER, enabled=False))
    with pytest.raises(FailedPrecondition) as refused:
        await put(sql_store, ("a",), "k", {"v": 2})
    assert refused.value.reason == "MEMORY_DISABLED"
    with pytest.raises(FailedPrecondition):
        await sql_store.documents.get_document(USER, ("a",), "k")
