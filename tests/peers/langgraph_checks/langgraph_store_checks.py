"""What LangGraph's own store tests do not reach (``InMemoryStore`` has no
TTL, no lexical search, no governance, one process): ``MnemoStore``'s TTL,
its ranking of a query without embeddings, two stores of one user, and the
memory gate.

Run by ``tests/peers/run_langgraph.py`` beside the sdist's tests, with
``langgraph_store_plugin`` (its live server); not collected by the project's
own run (the name is no ``test_*.py``: LangGraph is not in ``.venv``).
"""

from __future__ import annotations

import importlib.util
import time
import uuid
from pathlib import Path

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from langgraph_store_plugin import server_target

from mnemo.client import FailedPreconditionError, MnemoClient
from mnemo.integrations.langgraph import MnemoStore

WAIT_S = 10.0


def _store(user: str, **options: object) -> MnemoStore:
    return MnemoStore(server_target(), user=user, **options)  # type: ignore[arg-type]


@pytest.fixture
def user() -> str:
    return f"lgc-{uuid.uuid4().hex[:16]}"


def test_items_expire_after_their_ttl_and_reads_refresh_it(user: str) -> None:
    store = _store(user, ttl={"default_ttl": 60.0})
    store.put(("t",), "brief", {"v": 1}, ttl=0.002)  # minutes: 120 ms
    store.put(("t",), "kept", {"v": 1})
    store.put(("t",), "forever", {"v": 1}, ttl=None)
    with MnemoClient(server_target()) as client:
        kept = client.get_document(user, ("t",), "kept")
        assert kept.ttl.seconds == 3600 and kept.HasField("expire_time")
        assert not client.get_document(user, ("t",), "forever").HasField("expire_time")
        deadline = time.monotonic() + WAIT_S
        # (Reads that refresh would keep it alive: these do not.)
        while store.get(("t",), "brief", refresh_ttl=False) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.get(("t",), "brief", refresh_ttl=False) is None
        assert sorted(i.key for i in store.search(("t",))) == ["forever", "kept"]
        assert store.get(("t",), "kept", refresh_ttl=True) is not None
        refreshed = client.get_document(user, ("t",), "kept")
        assert refreshed.expire_time.ToMicroseconds() > kept.expire_time.ToMicroseconds()
    store.close()


def test_a_limit_of_zero_finds_nothing_as_in_memory_store_does(user: str) -> None:
    """0 reaches the server as "the default page size": the store must not send it."""
    ours, theirs = _store(user), InMemoryStore()
    for store in (ours, theirs):
        store.put(("a", "b"), "k1", {"v": 1})
        store.put(("a", "c"), "k2", {"v": 2})
    for store in (ours, theirs):
        assert store.search(("a",), limit=0) == []
        assert store.list_namespaces(limit=0) == []
        assert len(store.search(("a",), limit=1)) == 1
        assert len(store.list_namespaces(limit=1)) == 1
    ours.close()


async def test_a_limit_of_zero_finds_nothing_asynchronously_too(user: str) -> None:
    store = _store(user)
    await store.aput(("a",), "k1", {"v": 1})
    assert await store.asearch(("a",), limit=0) == []
    assert await store.alist_namespaces(limit=0) == []
    assert len(await store.asearch(("a",), limit=5)) == 1
    store.close()


def test_a_query_without_embeddings_is_ranked_lexically(user: str) -> None:
    store = _store(user)
    store.put(("notes",), "tea", {"text": "Green tea every morning"})
    store.put(("notes",), "trip", {"text": "A trip to Lisbon in May"})
    store.put(("notes",), "hidden", {"text": "tea again"}, index=False)
    store.put(("notes",), "fields", {"title": "tea", "body": "x"}, index=["body"])
    found = store.search(("notes",), query="morning tea")
    assert [i.key for i in found][0] == "tea" and found[0].score == pytest.approx(1.0)
    assert found[-1].key == "hidden" and found[-1].score is None
    assert next(i.score for i in found if i.key == "fields") == 0.0
    store.close()


def test_two_stores_of_one_user_share_items(user: str) -> None:
    phone, laptop = _store(user), _store(user)
    phone.put(("prefs",), "theme", {"mode": "dark"})
    item = laptop.get(("prefs",), "theme")
    assert item is not None and item.value == {"mode": "dark"}
    assert laptop.list_namespaces() == [("prefs",)]
    laptop.batch([PutOp(("prefs",), "theme", None)])
    assert phone.get(("prefs",), "theme") is None
    phone.close()
    laptop.close()


async def test_writes_pass_the_memory_gate(user: str) -> None:
    store = _store(user)
    await store.aput(("a",), "k", {"v": 1})
    with MnemoClient(server_target()) as client:
        client.update_memory_settings(user, enabled=False)
        with pytest.raises(FailedPreconditionError) as refused:
            await store.aput(("a",), "k", {"v": 2})
        assert refused.value.reason == "MEMORY_DISABLED"
        client.update_memory_settings(user, enabled=True)
    item = await store.aget(("a",), "k")
    assert item is not None and item.value == {"v": 1}
    store.close()


def test_the_guide_runs_as_written(user: str) -> None:
    """docs/integrations/langgraph.md: every Python block, in order, prints what it shows."""
    root = Path(__file__).resolve().parents[3]
    # By its path: ``tests`` here is the langgraph sdist's package.
    spec = importlib.util.spec_from_file_location(
        "doc_blocks", root / "tests/support/doc_blocks.py"
    )
    assert spec is not None and spec.loader is not None
    doc_blocks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc_blocks)
    page = root / "docs" / "integrations" / "langgraph.md"
    printed = doc_blocks.run_blocks(
        page,
        {
            "127.0.0.1:50051": server_target(),
            'user="u1"': f'user="{user}"',
            'user="alice"': f'user="{user}-a"',
        },
    )
    assert len(printed) == 5, printed
