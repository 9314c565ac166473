"""GovernanceService: validate, call the use case, convert the result.

The error contracts are those of ``protos/mnemo/v1/governance.proto`` and
``docs/api/governance.md``. Export, import and erasure of a user's data
(``ExportUserData``, ``ImportUserData``, ``DeleteUserData``) are the user-data
part of the service; the tenant's audit records of erasures
(``ListUserErasures``) are read here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc

from mnemo.v1 import governance_pb2 as pb
from mnemo.v1 import governance_pb2_grpc as pb_grpc
from mnemo_server.api import pagination
from mnemo_server.api.convert import expected_etag
from mnemo_server.api.governance import convert, requests
from mnemo_server.api.governance.rules import RULES
from mnemo_server.api.user_data.handlers import UserDataHandlers
from mnemo_server.api.validation import Validator, check_fields
from mnemo_server.auth.caller import caller_of, current_scope
from mnemo_server.config import Settings, is_loopback
from mnemo_server.domain.commands.governance import SetConsent, UpdateMemorySettings
from mnemo_server.domain.usecases.governance import Governance
from mnemo_server.domain.usecases.writes import Writes
from mnemo_server.rpc.peers import client_peer

Context = grpc.aio.ServicerContext[Any, Any]

EVENTS = pagination.Listing("ListEvents", keyset=(int, int))
ERASURES = pagination.Listing("ListUserErasures", keyset=(int, int))


class GovernanceServicer(pb_grpc.GovernanceServiceServicer):
    """Consent, the memory switch and analytics events over gRPC; export,
    import and erasure of a user's data are ``user_data``'s (``api.user_data.handlers``)."""

    def __init__(
        self,
        governance: Governance,
        writes: Writes,
        settings: Settings,
        user_data: UserDataHandlers,
    ) -> None:
        self._governance = governance
        self._writes = writes
        self._loopback = is_loopback(settings.listen)
        self._user_data = user_data

    # ---------------------------------------------------------------- consent

    async def GetConsent(
        self, request: pb.GetConsentRequest, context: Context
    ) -> pb.GetConsentResponse:
        user_id = requests.consent_user(request.name, "name", current_scope())
        consent = await self._governance.get_consent(user_id)
        return pb.GetConsentResponse(consent=convert.consent_to_proto(consent))

    async def SetConsent(
        self, request: pb.SetConsentRequest, context: Context
    ) -> pb.SetConsentResponse:
        scope = current_scope()
        v = Validator()
        user_id = v.attempt(
            lambda: requests.consent_user(request.consent.name, "consent.name", scope), ""
        )
        state = requests.consent_state_of(v, request.consent.state, "consent.state")
        check_fields(v, request, RULES)
        v.raise_if_invalid()
        written = await self._writes(
            SetConsent(
                caller=caller_of(scope),
                user_id=user_id,
                state=state,
                policy_version=request.consent.policy_version,
            )
        )
        change = written.value
        return pb.SetConsentResponse(
            consent=convert.consent_to_proto(change.consent),
            cancelled_candidates=change.cancelled_candidates,
            change_cursor=written.change_cursor,
        )

    # --------------------------------------------------------------- settings

    async def GetMemorySettings(
        self, request: pb.GetMemorySettingsRequest, context: Context
    ) -> pb.GetMemorySettingsResponse:
        user_id = requests.settings_user(request.name, "name", current_scope())
        settings = await self._governance.get_settings(user_id)
        return pb.GetMemorySettingsResponse(memory_settings=convert.settings_to_proto(settings))

    async def UpdateMemorySettings(
        self, request: pb.UpdateMemorySettingsRequest, context: Context
    ) -> pb.UpdateMemorySettingsResponse:
        scope = current_scope()
        wanted = request.memory_settings
        user_id = requests.settings_user(wanted.name, "memory_settings.name", scope)
        written = await self._writes(
            UpdateMemorySettings(
                caller=caller_of(scope),
                user_id=user_id,
                enabled=wanted.enabled,
                expected_etag=expected_etag(wanted.etag),
            )
        )
        return pb.UpdateMemorySettingsResponse(
            memory_settings=convert.settings_to_proto(written.value),
            change_cursor=written.change_cursor,
        )

    # ----------------------------------------------------------------- events

    async def ListEvents(
        self, request: pb.ListEventsRequest, context: Context
    ) -> pb.ListEventsResponse:
        scope = requests.event_scope(
            request.parent, "parent", current_scope(), loopback=self._loopback
        )
        v = Validator()
        types = requests.event_types_of(v, request.types)
        paging = EVENTS.page(v, request, (request.parent, requests.types_binding(types)))
        v.raise_if_invalid()
        page = await self._governance.list_events(
            scope, types, limit=paging.limit, after=paging.after
        )
        return pb.ListEventsResponse(
            events=[convert.event_to_proto(e) for e in page.items],
            next_page_token=paging.next_token(page.next_after),
        )

    async def WatchEvents(
        self, request: pb.WatchEventsRequest, context: Context
    ) -> AsyncIterator[pb.WatchEventsResponse]:
        call_scope = current_scope()
        scope = requests.event_scope(request.parent, "parent", call_scope, loopback=self._loopback)
        v = Validator()
        types = requests.event_types_of(v, request.types)
        v.raise_if_invalid()
        peer = client_peer(context) if call_scope is None else None
        watch = self._governance.watch(scope, types, peer)
        async with contextlib.aclosing(watch):  # the slot is free once the call ends
            async for event in watch:
                yield pb.WatchEventsResponse(event=convert.event_to_proto(event))

    # ---------------------------------------------------- erasure audit records

    async def ListUserErasures(
        self, request: pb.ListUserErasuresRequest, context: Context
    ) -> pb.ListUserErasuresResponse:
        tenant_id = requests.erasures_tenant(
            request.parent, "parent", current_scope(), loopback=self._loopback
        )
        v = Validator()
        paging = ERASURES.page(v, request, (request.parent,))
        v.raise_if_invalid()
        page = await self._governance.list_user_erasures(
            tenant_id, limit=paging.limit, after=paging.after
        )
        return pb.ListUserErasuresResponse(
            erasures=[convert.erasure_to_proto(e) for e in page.items],
            next_page_token=paging.next_token(page.next_after),
        )

    # -------------------------------------------------------------- user data

    async def ExportUserData(
        self, request: pb.ExportUserDataRequest, context: Context
    ) -> AsyncIterator[pb.ExportUserDataResponse]:
        async for response in self._user_data.export_user_data(request, context):
            yield response

    async def ImportUserData(
        self, request_iterator: AsyncIterator[pb.ImportUserDataRequest], context: Context
    ) -> pb.ImportUserDataResponse:
        return await self._user_data.import_user_data(request_iterator, context)

    async def DeleteUserData(
        self, request: pb.DeleteUserDataRequest, context: Context
    ) -> pb.DeleteUserDataResponse:
        return await self._user_data.delete_user_data(request, context)
