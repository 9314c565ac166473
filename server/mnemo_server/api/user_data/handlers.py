"""The user's data rights of ``GovernanceService``: ``ExportUserData``,
``ImportUserData`` and ``DeleteUserData`` (``GovernanceServicer`` delegates
to ``UserDataHandlers``).

- Export streams every record of the user (``api.user_data.convert``), in the
  deterministic order of ``store.user_data.export``.
- Import reads the whole stream, checks it (``api.user_data.import_stream``) and
  loads it in one transaction: either all of it or nothing. The response
  counts the records loaded per kind.
- Delete erases everything of the user and returns the receipt.

Errors: ``INVALID_ARGUMENT`` (``INVALID_NAME`` for ``parent``; an import's
invalid records, with field violations ``records[i].<kind>.<field>``),
``NOT_FOUND`` (a user the caller may not name), ``FAILED_PRECONDITION``
(``IMPORT_TARGET_NOT_EMPTY``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import grpc

from mnemo.v1 import governance_pb2 as pb
from mnemo_server.api import convert, names
from mnemo_server.api.governance import convert as convert_governance
from mnemo_server.api.user_data.convert import record_of
from mnemo_server.api.user_data.import_stream import ImportCollector
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.config import Settings
from mnemo_server.domain.commands.governance import DeleteUserData, ImportUserData
from mnemo_server.domain.usecases.user_data import UserDataRights

Context = grpc.aio.ServicerContext[Any, Any]


class UserDataHandlers:
    """The three RPCs, over the ``UserDataRights`` use cases."""

    def __init__(self, rights: UserDataRights, settings: Settings) -> None:
        self._rights = rights
        self._settings = settings

    async def export_user_data(
        self, request: pb.ExportUserDataRequest, context: Context
    ) -> AsyncIterator[pb.ExportUserDataResponse]:
        user_id = names.parse_user(request.parent, "parent", current_scope())
        async for item in self._rights.export(user_id):
            yield pb.ExportUserDataResponse(record=record_of(user_id, item))

    async def import_user_data(
        self, requests: AsyncIterable[pb.ImportUserDataRequest], context: Context
    ) -> pb.ImportUserDataResponse:
        scope = current_scope()
        collector = ImportCollector(self._settings, scope)
        async for request in requests:
            collector.add(request)
        data = collector.finish()
        written = await self._rights.import_(
            ImportUserData(caller=caller_of(scope), user_id=collector.user_id, data=data)
        )
        loaded = dict(collector.kinds) | dict.fromkeys(written.value, 0)
        return pb.ImportUserDataResponse(loaded=loaded, change_cursor=written.change_cursor)

    async def delete_user_data(
        self, request: pb.DeleteUserDataRequest, context: Context
    ) -> pb.DeleteUserDataResponse:
        scope = current_scope()
        user_id = names.parse_user(request.parent, "parent", scope)
        written = await self._rights.erase(DeleteUserData(caller=caller_of(scope), user_id=user_id))
        receipt = written.value
        erased = receipt.erased
        return pb.DeleteUserDataResponse(
            deleted_rows=dict(erased.deleted_rows),
            retained_rows=dict(erased.retained_rows),
            consent=convert_governance.consent_to_proto(erased.consent),
            memory_settings=convert_governance.settings_to_proto(erased.settings),
            delete_time=convert.timestamp(receipt.delete_time),
            change_cursor=written.change_cursor,
        )
