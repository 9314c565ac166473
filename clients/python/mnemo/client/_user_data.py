"""The user's data as a whole (``mnemo.v1.GovernanceService``): export every
record, import an export into a user without data, erase everything.

Each function builds one call; its docstring is the client method's docstring.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mnemo.client._calls import ClientStreamCall, Rpc, StreamCall, UnaryCall
from mnemo.client._names import user_name
from mnemo.v1 import governance_pb2 as gv
from mnemo.v1.governance_pb2_grpc import GovernanceServiceStub


def _rpc(method: str) -> Rpc:
    return Rpc(GovernanceServiceStub, method)


def _record(response: gv.ExportUserDataResponse) -> list[gv.ExportRecord]:
    return [response.record]


def _loaded(response: gv.ImportUserDataResponse) -> dict[str, int]:
    return dict(response.loaded)


def export_user_data(
    user: str, *, timeout: float | None = None
) -> StreamCall[gv.ExportUserDataRequest, gv.ExportRecord]:
    """Iterate over every record of the user's data (``ExportRecord``: a
    conversation, message, failed run, working memory, memory entry or
    version, tombstone, candidate, compaction checkpoint, consent, settings
    or event), in a deterministic order, as the server streams them.
    ``timeout`` bounds the whole stream: give a large user a long one.

    Raises:
        InvalidArgumentError: a malformed user id (``INVALID_NAME``).
    """
    request = gv.ExportUserDataRequest(parent=user_name(user))
    return StreamCall(_rpc("ExportUserData"), request, _record, timeout)


def _requests(
    parent: str, records: Iterable[gv.ExportRecord]
) -> Iterator[gv.ImportUserDataRequest]:
    sent = False
    for record in records:
        sent = True
        yield gv.ImportUserDataRequest(parent=parent, record=record)
    if not sent:  # the server still learns whom the (empty) import is for
        yield gv.ImportUserDataRequest(parent=parent)


def import_user_data(
    user: str, records: Iterable[gv.ExportRecord], *, timeout: float | None = None
) -> ClientStreamCall[gv.ImportUserDataRequest, dict[str, int]]:
    """Load ``records`` (as ``export_user_data`` yields them, in that order)
    into ``user``, who must have no data; returns how many records were
    loaded per kind. All or nothing: a refused import loads nothing. Every
    name in the records must be of ``user``. The records are sent as
    ``records`` yields them; ``timeout`` bounds the whole call.

    Raises:
        InvalidArgumentError: invalid records; each field violation names one
            as ``records[i].<kind>.<field>`` (``i`` counts from 0).
        FailedPreconditionError: the user has data (``IMPORT_TARGET_NOT_EMPTY``).
    """
    requests = _requests(user_name(user), records)
    return ClientStreamCall(_rpc("ImportUserData"), requests, _loaded, timeout)


def delete_user_data(
    user: str, *, timeout: float | None = None
) -> UnaryCall[gv.DeleteUserDataRequest, gv.DeleteUserDataResponse]:
    """Erase everything stored for the user, in every table; returns the
    receipt: ``deleted_rows`` per table and ``delete_time``. Erasing again
    (or an unknown user) erases nothing and returns zeros.

    Raises:
        InvalidArgumentError: a malformed user id (``INVALID_NAME``).
    """
    request = gv.DeleteUserDataRequest(parent=user_name(user))
    return UnaryCall(_rpc("DeleteUserData"), request, lambda response: response, timeout)
