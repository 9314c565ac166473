"""Shared builders for the governance API tests: consent, the memory switch,
events, and the failures the gates answer."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc

from mnemo.v1 import governance_pb2 as gv
from mnemo.v1 import governance_pb2_grpc
from tests.support.rpc_errors import ErrorDetails, error_details

Governance = governance_pb2_grpc.GovernanceServiceStub
T = TypeVar("T")

GRANTED = gv.CONSENT_STATE_GRANTED
WITHDRAWN = gv.CONSENT_STATE_WITHDRAWN
WAIT_S = 20.0
"""The longest any test waits for something that happens in the background."""


def set_consent(
    stub: Governance, user: str, state: gv.ConsentState, policy_version: str = ""
) -> gv.SetConsentResponse:
    response: gv.SetConsentResponse = stub.SetConsent(
        gv.SetConsentRequest(
            consent=gv.Consent(name=f"{user}/consent", state=state, policy_version=policy_version)
        )
    )
    return response


def switch(stub: Governance, user: str, enabled: bool, etag: str = "") -> gv.MemorySettings:
    response = stub.UpdateMemorySettings(
        gv.UpdateMemorySettingsRequest(
            memory_settings=gv.MemorySettings(
                name=f"{user}/memorySettings", enabled=enabled, etag=etag
            )
        )
    )
    settings: gv.MemorySettings = response.memory_settings
    return settings


def all_events(
    stub: Governance,
    parent: str,
    types: Sequence[gv.EventType] = (),
    page_size: int = 0,
    **kw: Any,
) -> list[gv.Event]:
    """Every event ``ListEvents`` returns, page by page (newest first)."""
    result: list[gv.Event] = []
    token = ""
    while True:
        page = stub.ListEvents(
            gv.ListEventsRequest(parent=parent, types=types, page_size=page_size, page_token=token),
            **kw,
        )
        result.extend(page.events)
        token = page.next_page_token
        if not token:
            return result


def failure(call: Callable[[], Any]) -> ErrorDetails | None:
    """What ``call`` failed with, or ``None`` if it succeeded (a stream is drained)."""
    try:
        result = call()
        if hasattr(result, "__iter__") and not hasattr(result, "ListFields"):
            list(result)
    except grpc.RpcError as error:
        return error_details(error)
    return None


def eventually(probe: Callable[[], T | None], what: str, timeout: float = WAIT_S) -> T:
    """Poll ``probe`` until it returns something (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
