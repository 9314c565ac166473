"""App states (``store.app_state``, ``domain.app_state``) on every backend
(on PostgreSQL under the sharding audit: the table has no ``user_id``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from mnemo_server.domain.app_state import MAX_STATE_BYTES, AppStates
from mnemo_server.domain.errors import Aborted, InvalidArgument, PermissionDenied
from mnemo_server.domain.identity import Caller
from mnemo_server.store.composed import SqlStore


async def test_unwritten_state_is_empty(sql_store: SqlStore) -> None:
    found = await sql_store.app_states.get_app_state("", "travel")
    assert (found.state_json, found.etag, found.update_time) == ("{}", "", None)


async def test_merge_replaces_top_level_members(sql_store: SqlStore) -> None:
    store = sql_store.app_states
    first = await store.update_app_state("", "travel", {"a": 1, "b": {"x": 1}}, None)
    assert json.loads(first.state_json) == {"a": 1, "b": {"x": 1}} and first.etag
    second = await store.update_app_state("", "travel", {"b": {"y": 2}, "c": None}, first.etag)
    assert json.loads(second.state_json) == {"a": 1, "b": {"y": 2}, "c": None}
    assert second.etag != first.etag
    assert await store.get_app_state("", "travel") == second
    with pytest.raises(Aborted) as caught:
        await store.update_app_state("", "travel", {"a": 2}, first.etag)
    assert caught.value.reason == "ETAG_MISMATCH"
    assert await store.get_app_state("", "travel") == second


async def test_tenants_and_apps_are_apart(sql_store: SqlStore) -> None:
    store = sql_store.app_states
    await store.update_app_state("t1", "travel", {"who": "t1"}, None)
    await store.update_app_state("t2", "travel", {"who": "t2"}, None)
    await store.update_app_state("t1", "chess", {"who": "chess"}, None)
    assert json.loads((await store.get_app_state("t1", "travel")).state_json) == {"who": "t1"}
    assert json.loads((await store.get_app_state("t2", "travel")).state_json) == {"who": "t2"}
    assert (await store.get_app_state("t3", "travel")).etag == ""


async def test_concurrent_merges_are_all_kept(sql_store: SqlStore) -> None:
    store = sql_store.app_states
    await asyncio.gather(
        *(store.update_app_state("", "race", {f"k{i}": i}, None) for i in range(12))
    )
    state = json.loads((await store.get_app_state("", "race")).state_json)
    assert state == {f"k{i}": i for i in range(12)}


async def test_state_over_the_limit_is_refused(sql_store: SqlStore) -> None:
    store = sql_store.app_states
    half = "x" * (MAX_STATE_BYTES // 2)
    await store.update_app_state("", "big", {"a": half}, None)
    with pytest.raises(InvalidArgument) as caught:
        await store.update_app_state("", "big", {"b": half}, None)
    assert caught.value.reason == "FIELD_TOO_LARGE"
    assert json.loads((await store.get_app_state("", "big")).state_json) == {"a": half}


async def test_only_admins_write(sql_store: SqlStore) -> None:
    states = AppStates(sql_store.app_states)
    admin = Caller(user_id="boss", tenant_id="t1", admin=True)
    user = Caller(user_id="alice", tenant_id="t1")
    await states.update(admin, "travel", {"motd": "hi"}, None)
    with pytest.raises(PermissionDenied):
        await states.update(user, "travel", {"motd": "pwned"}, None)
    assert json.loads((await states.get(user, "travel")).state_json) == {"motd": "hi"}
    outsider = Caller(user_id="eve", tenant_id="t2")
    assert (await states.get(outsider, "travel")).state_json == "{}"
