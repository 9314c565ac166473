"""A user id taken up by another tenant after an erasure is a new user whose
change feed starts empty (issue 34, item 9), against a live server with JWT
tenants on both stores.

``DeleteUserData`` leaves one ERASE change in the erased user's feed, so that
the user's other devices learn of the erasure. It belongs to the erased
user's tenant: a caller of another tenant naming the same user id — the id's
new owner, before or after its first write, or an admin of that tenant —
sees nothing of it (no change, ``latest_cursor`` 0, a cursor of the old feed
is ``CURSOR_AHEAD``), and the new owner's cursors start at 1. A watch opened
by the old tenant never receives the new owner's changes. The same tenant
re-creating the user keeps following one feed: its cursors keep growing and
a device from before the erasure gets the ERASE change first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from mnemo.v1 import conversations_pb2 as cv
from mnemo.v1 import conversations_pb2_grpc, governance_pb2_grpc, memories_pb2_grpc, sync_pb2_grpc
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import memories_pb2 as mm
from mnemo.v1 import sync_pb2 as sy
from tests.api.changes import Watch
from tests.support.rpc_errors import error_details, rpc_failure
from tests.support.server import running_server
from tests.support.tokens import SigningKeys, bearer

pytestmark = pytest.mark.timeout(180)

USER = "u1"
PARENT = f"users/{USER}"
TIMEOUT_S = 30.0
Metadata = tuple[tuple[str, str], ...]


@dataclass
class Server:
    target: str
    keys: SigningKeys
    channel: grpc.Channel

    def token(self, tenant: str, sub: str = USER, *, admin: bool = False) -> Metadata:
        return bearer(self.keys.token(sub, tenant=tenant, admin=admin))

    def write(self, who: Metadata, text: str) -> int:
        """A memory entry of ``USER``; the change cursor of the write."""
        response = memories_pb2_grpc.MemoryServiceStub(self.channel).CreateMemory(
            mm.CreateMemoryRequest(parent=PARENT, memory=mm.Memory(text=text)),
            metadata=who,
            timeout=TIMEOUT_S,
        )
        return int(response.change_cursor)

    def converse(self, who: Metadata, text: str) -> int:
        """A message of ``USER``'s conversation ``chat``; the change cursor."""
        response = conversations_pb2_grpc.ConversationServiceStub(self.channel).AppendMessages(
            cv.AppendMessagesRequest(
                conversation=f"{PARENT}/conversations/chat",
                messages=[
                    cv.HistoryMessage(message_json=f'{{"role": "user", "content": "{text}"}}')
                ],
            ),
            metadata=who,
            timeout=TIMEOUT_S,
        )
        return int(response.change_cursor)

    def erase(self, who: Metadata) -> gv.DeleteUserDataResponse:
        response: gv.DeleteUserDataResponse = governance_pb2_grpc.GovernanceServiceStub(
            self.channel
        ).DeleteUserData(gv.DeleteUserDataRequest(parent=PARENT), metadata=who, timeout=TIMEOUT_S)
        return response

    def changes(self, who: Metadata, after: int = 0) -> sy.ListChangesResponse:
        response: sy.ListChangesResponse = sync_pb2_grpc.SyncServiceStub(self.channel).ListChanges(
            sy.ListChangesRequest(parent=PARENT, after_cursor=after, page_size=1000),
            metadata=who,
            timeout=TIMEOUT_S,
        )
        return response


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Server]:
    keys = SigningKeys.hs256()
    with (
        running_server(database_url, **keys.server_settings(tmp_path)) as target,
        grpc.insecure_channel(target) as channel,
    ):
        yield Server(target, keys, channel)


def _erased_by_tenant_one(server: Server) -> int:
    """``USER`` of tenant t1 writes, then erases itself; the ERASE cursor."""
    one = server.token("t1")
    server.write(one, "My diagnosis is lupus.")
    server.converse(one, "hello")
    erased = server.erase(one)
    assert erased.change_cursor > 0
    # The erased user's own devices still learn of it.
    (erase,) = server.changes(one, after=1).changes
    assert (erase.operation, erase.cursor) == (sy.CHANGE_OPERATION_ERASE, erased.change_cursor)
    return int(erased.change_cursor)


def test_another_tenants_user_with_the_same_id_starts_with_an_empty_feed(server: Server) -> None:
    erase_cursor = _erased_by_tenant_one(server)
    two, admin_of_two = server.token("t2"), server.token("t2", "ops", admin=True)

    # Before its first write: nothing of the previous user, for the id's new
    # owner and for an admin of its tenant alike.
    for who in (two, admin_of_two):
        page = server.changes(who)
        assert (list(page.changes), page.latest_cursor, page.oldest_cursor) == ([], 0, 1)
        ahead = rpc_failure(
            sync_pb2_grpc.SyncServiceStub(server.channel).ListChanges,
            sy.ListChangesRequest(parent=PARENT, after_cursor=erase_cursor),
            metadata=who,
            timeout=TIMEOUT_S,
        )
        assert (ahead.code, ahead.reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_AHEAD")
        assert ahead.metadata["latest_cursor"] == "0"
    watch = Watch(server.target, metadata=two, user=USER)
    try:
        first = watch.next_event()
        assert first.HasField("heartbeat") and first.heartbeat.cursor == 0
    finally:
        watch.close()

    # Its first writes start the feed at cursor 1, the new owner's alone.
    written = [server.write(two, "I like tea."), server.converse(two, "hi")]
    page = server.changes(two)
    assert [c.cursor for c in page.changes] == list(range(1, written[-1] + 1))
    assert sy.CHANGE_OPERATION_ERASE not in [c.operation for c in page.changes]
    assert (page.latest_cursor, page.oldest_cursor) == (written[-1], 1)
    assert "lupus" not in str(page)
    # And the previous tenant's caller no longer reaches the id.
    gone = rpc_failure(
        sync_pb2_grpc.SyncServiceStub(server.channel).ListChanges,
        sy.ListChangesRequest(parent=PARENT),
        metadata=server.token("t1"),
        timeout=TIMEOUT_S,
    )
    assert gone.code == grpc.StatusCode.NOT_FOUND


def test_a_watch_of_the_previous_tenant_never_gets_the_new_owners_changes(server: Server) -> None:
    one = server.token("t1")
    server.write(one, "My diagnosis is lupus.")
    watch = Watch(server.target, metadata=one, user=USER)
    try:
        assert len(watch.changes_until_heartbeat()) == 1
        erase_cursor = server.erase(one).change_cursor
        erase = watch.next_event().change
        assert (erase.operation, erase.cursor) == (sy.CHANGE_OPERATION_ERASE, erase_cursor)
        # The id's new owner writes past the old feed's cursor.
        two = server.token("t2")
        for n in range(erase_cursor + 2):
            server.write(two, f"Fact {n} of the new owner.")
        while True:
            item = watch.next()
            if isinstance(item, sy.WatchChangesResponse) and item.HasField("heartbeat"):
                continue
            break
        assert isinstance(item, grpc.RpcError), f"the old tenant's watch got {item!r}"
        ended = error_details(item)
        assert (ended.code, ended.reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_AHEAD")
    finally:
        watch.close()


def test_the_same_tenant_re_creating_the_user_keeps_following_one_feed(server: Server) -> None:
    """The choice for the same tenant: a user id names one user of a tenant,
    erased or not, so its devices keep one feed across the erasure."""
    erase_cursor = _erased_by_tenant_one(server)
    one = server.token("t1")
    again = server.write(one, "I like tea.")
    assert again > erase_cursor
    page = server.changes(one, after=1)  # a device from before the erasure
    assert [c.cursor for c in page.changes] == list(range(erase_cursor, again + 1))
    assert page.changes[0].operation == sy.CHANGE_OPERATION_ERASE
    assert page.latest_cursor == again
