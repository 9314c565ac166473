"""Export, import and erasure of a user's data through a real server, with the
blocking and the asyncio client."""

from __future__ import annotations

import pytest

from mnemo.client import (
    ExportRecord,
    FailedPreconditionError,
    InvalidArgumentError,
    MnemoClient,
)
from mnemo.client._user_data import import_user_data


def _write_some(client: MnemoClient, user: str) -> None:
    client.remember_exchange(user, ask="Where do I live?", answer="Lyon")
    client.append_messages(user, "c1", [{"role": "user", "content": "hello"}])
    client.create_memory(user, "Lives in Lyon", key="home", embedding=("m", [1.0, 2.0]))


def test_export_delete_import_export(
    client: MnemoClient, other_client: MnemoClient, user: str
) -> None:
    _write_some(client, user)
    records = list(client.export_user_data(user))
    assert all(isinstance(r, ExportRecord) for r in records)
    assert {r.WhichOneof("record") for r in records} >= {"conversation", "memory", "message"}

    receipt = client.delete_user_data(user)
    assert receipt.deleted_rows["users"] == 1 and receipt.deleted_rows["messages"] == 1
    assert list(client.export_user_data(user)) == []
    assert set(other_client.delete_user_data(user).deleted_rows.values()) == {0}

    loaded = other_client.import_user_data(user, records)
    assert sum(loaded.values()) == len(records)
    assert list(client.export_user_data(user)) == records


def test_an_import_into_a_user_with_data_is_refused(client: MnemoClient, user: str) -> None:
    _write_some(client, user)
    records = list(client.export_user_data(user))
    with pytest.raises(FailedPreconditionError) as raised:
        client.import_user_data(user, records)
    assert raised.value.reason == "IMPORT_TARGET_NOT_EMPTY"


def test_invalid_records_are_named_by_their_place(client: MnemoClient, user: str) -> None:
    _write_some(client, user)
    records = list(client.export_user_data(user))
    client.delete_user_data(user)
    broken = ExportRecord()
    broken.CopyFrom(records[0])
    broken.conversation.name = "users/someone-else/conversations/c1"
    with pytest.raises(InvalidArgumentError) as raised:
        client.import_user_data(user, [*records[1:], broken])
    assert f"records[{len(records) - 1}].conversation.name" in {
        v.field for v in raised.value.field_violations
    }
    assert list(client.export_user_data(user)) == []


def test_an_empty_import_names_its_user() -> None:
    call = import_user_data("u1", [])
    assert [r.parent for r in call.payload()] == ["users/u1"]
    assert not any(r.HasField("record") for r in import_user_data("u1", []).payload())


def test_an_empty_import_loads_nothing(client: MnemoClient, user: str) -> None:
    assert client.import_user_data(user, iter(())) == {}
