"""Governance domain objects <-> mnemo.v1 protos (consent, memory settings,
events, audit records of erasures) and the enum mappings both ways. Pure
functions."""

from __future__ import annotations

from mnemo.v1 import governance_pb2 as pb
from mnemo_server.api.convert import enum_mapping, timestamp
from mnemo_server.domain.governance import (
    Consent,
    ConsentState,
    Event,
    EventType,
    MemorySettings,
    consent_name,
    event_name,
    memory_settings_name,
)
from mnemo_server.domain.names import user_name
from mnemo_server.domain.user_data import UserErasure

CONSENT_STATES: dict[ConsentState, pb.ConsentState] = enum_mapping(
    ConsentState, pb.ConsentState, "CONSENT_STATE_"
)
EVENT_TYPES: dict[EventType, pb.EventType] = enum_mapping(EventType, pb.EventType, "EVENT_TYPE_")


def consent_to_proto(consent: Consent) -> pb.Consent:
    return pb.Consent(
        name=consent_name(consent.user_id),
        state=CONSENT_STATES[consent.state],
        policy_version=consent.policy_version,
        update_time=timestamp(consent.update_time),
    )


def settings_to_proto(settings: MemorySettings) -> pb.MemorySettings:
    return pb.MemorySettings(
        name=memory_settings_name(settings.user_id),
        enabled=settings.enabled,
        etag=settings.etag,
        update_time=timestamp(settings.update_time),
    )


def event_to_proto(event: Event) -> pb.Event:
    """``tenant`` is the tenant id (``""`` without one)."""
    return pb.Event(
        name=event_name(event.user_id, event.event_id),
        type=EVENT_TYPES[event.type],
        attributes=event.attributes,
        create_time=timestamp(event.create_time),
        tenant=event.tenant_id,
    )


def erasure_to_proto(erasure: UserErasure) -> pb.UserErasure:
    return pb.UserErasure(
        user=user_name(erasure.erased_user_id),
        erased_by=erasure.erased_by,
        by_admin=erasure.by_admin,
        erase_time=timestamp(erasure.erase_time),
        deleted_rows=dict(erasure.deleted_rows),
    )
