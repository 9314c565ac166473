"""The writes of governance and of a user's data as a whole: ``GovernanceService``."""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_server.domain.commands import Command
from mnemo_server.domain.governance import ConsentChange, ConsentState, MemorySettings
from mnemo_server.domain.user_data import Erased, UserData

__all__ = ["DeleteUserData", "ImportUserData", "SetConsent", "UpdateMemorySettings"]


@dataclass(frozen=True, kw_only=True)
class SetConsent(Command[ConsentChange]):
    """Store the consent; withdrawing cancels every pending candidate and a
    change records ``memory_consent_changed``. Setting what is stored changes
    nothing."""

    state: ConsentState
    policy_version: str = ""


@dataclass(frozen=True, kw_only=True)
class UpdateMemorySettings(Command[MemorySettings]):
    """Switch memory on or off (a new etag). Raises ``ETAG_MISMATCH``."""

    enabled: bool
    expected_etag: str | None = None


@dataclass(frozen=True, kw_only=True)
class ImportUserData(Command[tuple[str, ...]]):
    """Load ``data`` into a user who has none (a consent decision and memory
    switch that survived an erasure aside: they stay, and the data's
    records of them are not applied), in one transaction of its own; the
    record kinds not applied. Raises ``IMPORT_TARGET_NOT_EMPTY``,
    ``NotFound``."""

    data: UserData

    @property
    def alone(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class DeleteUserData(Command[Erased]):
    """Erase every row of the user but the consent decision and memory
    switch, in one transaction of its own (``domain.user_data.Erased``).
    Idempotent (zeros the second time, and no change appended)."""

    @property
    def alone(self) -> bool:
        return True
