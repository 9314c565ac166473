"""The checkpoint calls of the Python client (``mnemo.client._checkpoints``):
what they send, and the calls against the suite's server through both
clients (``client``: sync, and async behind the same methods)."""

from __future__ import annotations

import pytest

from mnemo.client import InvalidArgumentError, MnemoClient, NotFoundError
from mnemo.client import _checkpoints as checkpoints
from mnemo.v1 import checkpoints_pb2 as cp


def test_names_and_the_filter_as_json() -> None:
    call = checkpoints.list_checkpoints_page(
        "u1", "t-1", metadata_filter={"source": "input", "step": 2, "ok": True}
    )
    assert call.request.parent == "users/u1/threads/t-1"
    assert not call.request.HasField("checkpoint_ns")
    assert dict(call.request.metadata_filter) == {"source": '"input"', "step": "2", "ok": "true"}
    prune = checkpoints.prune_threads("u1", ["a", "b"], strategy="delete").request
    assert list(prune.thread_ids) == ["a", "b"]
    assert prune.strategy == cp.PRUNE_STRATEGY_DELETE
    with pytest.raises(InvalidArgumentError):
        checkpoints.delete_thread("u1", "t/../other")


def test_checkpoints_writes_and_threads(client: MnemoClient, user: str) -> None:
    for n in range(3):
        stored = client.put_checkpoint(
            user,
            "t1",
            checkpoint_id=f"0{n}",
            type="bytes",
            checkpoint=bytes([n, 255]),
            metadata_json=f'{{"run_id": "r{n % 2}"}}',
        )
        assert stored.checkpoint == b"" and stored.create_time.seconds > 0
    write = cp.PendingWrite(task_id="t", idx=0, channel="c", type="bytes", value=b"\x02")
    assert client.put_checkpoint_writes(user, "t1", checkpoint_id="02", writes=[write]) == 1
    found = client.get_checkpoint(user, "t1")
    assert (found.checkpoint, [w.value for w in found.pending_writes]) == (b"\x02\xff", [b"\x02"])
    page = client.list_checkpoints_page(user, "t1", page_size=2)
    assert [c.checkpoint_id for c in page.checkpoints] == ["02", "01"]
    assert page.next_before_checkpoint_id == "01"
    assert client.copy_thread(user, "t1", "t2") == 3
    assert client.delete_checkpoints_for_runs(user, ["r0"]) == 4
    assert client.prune_threads(user, ["t1", "t2"]) == 0
    assert client.delete_thread(user, "t1") == 1
    with pytest.raises(NotFoundError):
        client.get_checkpoint(user, "t1")
