"""GovernanceService consent and memory settings through a real server:
defaults, updates, idempotence, etags and the errors of each RPC."""

from __future__ import annotations

import grpc

from mnemo.v1 import governance_pb2 as gv
from tests.api.governance import GRANTED, WITHDRAWN, Governance, set_consent, switch
from tests.api.memories import USER
from tests.support.rpc_errors import rpc_failure


def test_a_user_who_never_set_consent_has_granted(governance: Governance) -> None:
    consent = governance.GetConsent(gv.GetConsentRequest(name=f"{USER}/consent")).consent
    assert (consent.name, consent.state, consent.policy_version) == (
        f"{USER}/consent",
        GRANTED,
        "",
    )
    assert not consent.HasField("update_time")


def test_consent_is_stored_with_its_policy_version_and_time(governance: Governance) -> None:
    withdrawn = set_consent(governance, USER, WITHDRAWN, "privacy-2026-01").consent
    assert withdrawn.HasField("update_time")
    assert governance.GetConsent(gv.GetConsentRequest(name=f"{USER}/consent")).consent == withdrawn
    # The same again changes nothing, not even the time.
    assert set_consent(governance, USER, WITHDRAWN, "privacy-2026-01").consent == withdrawn
    granted = set_consent(governance, USER, GRANTED, "privacy-2026-02").consent
    assert (granted.state, granted.policy_version) == (GRANTED, "privacy-2026-02")
    assert granted.update_time.ToDatetime() >= withdrawn.update_time.ToDatetime()
    # Another user is untouched.
    other = governance.GetConsent(gv.GetConsentRequest(name="users/u2/consent")).consent
    assert other.state == GRANTED


def test_consent_errors(governance: Governance) -> None:
    for name in ("", "users/u1", "users/u1/consent/x", "users//consent"):
        failure = rpc_failure(governance.GetConsent, gv.GetConsentRequest(name=name))
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_NAME",
        ), name
    failure = rpc_failure(
        governance.SetConsent,
        gv.SetConsentRequest(consent=gv.Consent(name="users/u1/consent", policy_version="x" * 129)),
    )
    assert failure.code is grpc.StatusCode.INVALID_ARGUMENT
    assert set(failure.fields) == {"consent.state", "consent.policy_version"}
    failure = rpc_failure(
        governance.SetConsent,
        gv.SetConsentRequest(consent=gv.Consent(name="users/u1", state=WITHDRAWN)),
    )
    assert (failure.reason, failure.fields) == ("INVALID_NAME", ("consent.name",))


def test_memory_settings_default_update_and_etag(governance: Governance) -> None:
    name = f"{USER}/memorySettings"
    initial = governance.GetMemorySettings(gv.GetMemorySettingsRequest(name=name)).memory_settings
    assert (initial.name, initial.enabled, initial.etag) == (name, True, "")
    assert not initial.HasField("update_time")

    off = switch(governance, USER, enabled=False, etag="")
    assert (off.enabled, bool(off.etag), off.HasField("update_time")) == (False, True, True)
    assert (
        governance.GetMemorySettings(gv.GetMemorySettingsRequest(name=name)).memory_settings == off
    )

    on = switch(governance, USER, enabled=True, etag=off.etag)
    assert on.enabled and on.etag != off.etag
    stale = rpc_failure(
        governance.UpdateMemorySettings,
        gv.UpdateMemorySettingsRequest(
            memory_settings=gv.MemorySettings(name=name, enabled=False, etag=off.etag)
        ),
    )
    assert (stale.code, stale.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
    assert stale.metadata["name"] == name
    # Without an etag the update is unconditional.
    assert not switch(governance, USER, enabled=False).enabled


def test_memory_settings_errors(governance: Governance) -> None:
    failure = rpc_failure(
        governance.GetMemorySettings, gv.GetMemorySettingsRequest(name="users/u1/consent")
    )
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME")
    failure = rpc_failure(
        governance.UpdateMemorySettings,
        gv.UpdateMemorySettingsRequest(memory_settings=gv.MemorySettings(name="")),
    )
    assert (failure.reason, failure.metadata["field"]) == ("INVALID_NAME", "memory_settings.name")


def test_switching_memory_on_never_lifts_a_withdrawn_consent(governance: Governance) -> None:
    set_consent(governance, USER, WITHDRAWN)
    switch(governance, USER, enabled=False)
    switch(governance, USER, enabled=True)
    consent = governance.GetConsent(gv.GetConsentRequest(name=f"{USER}/consent")).consent
    assert consent.state == WITHDRAWN
