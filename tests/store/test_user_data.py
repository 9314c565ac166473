"""``SqlUserData`` below the API: an export read in batches of any size is
the same, and an import that fails in the database leaves nothing behind
(one transaction). On both backends."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from sqlalchemy.exc import IntegrityError

from mnemo_server.domain.memory_models import Memory
from mnemo_server.domain.models import Conversation
from mnemo_server.domain.usecases.user_data import UserDataRights
from mnemo_server.domain.user_data import ExportItem, UserData
from mnemo_server.store.transactions.database import Database
from mnemo_server.store.user_data.store import SqlUserData
from tests.api.user_data import populate
from tests.store.writes import import_user
from tests.support.server import running_server
from tests.support.user_rows import user_digest

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def _exported(rights: UserDataRights, user_id: str) -> list[ExportItem]:
    return [item async for item in rights.export(user_id)]


async def test_an_export_in_batches_of_one_is_the_export_in_one_batch(
    database_url: str, database: Database
) -> None:
    with running_server(database_url) as target, grpc.insecure_channel(target) as channel:
        populate(channel, "u1", "mark")
        populate(channel, "u2", "other")
    store = SqlUserData(database)
    whole = await _exported(UserDataRights(store, batch_size=10_000), "u1")
    assert len(whole) > 40
    assert await _exported(UserDataRights(store, batch_size=1), "u1") == whole
    assert await _exported(UserDataRights(store, batch_size=7), "u1") == whole


async def test_an_import_failing_in_the_database_leaves_nothing(
    database_url: str, database: Database
) -> None:
    entry = Memory(memory_id="m1", user_id="u1", text="a fact", create_time=T0, update_time=T0)
    data = UserData(
        conversations=(Conversation("u1", "c1", create_time=T0, update_time=T0, etag="e1"),),
        memories=(entry, entry),  # the edge would refuse this: the database does
    )
    with pytest.raises(IntegrityError):
        await import_user(SqlUserData(database), "u1", data)
    assert {count for count, _ in user_digest(database_url, "u1").values()} == {0}
    with pytest.raises(ValueError):
        UserDataRights(SqlUserData(database), batch_size=0)
