"""The writes of governance and of a user's data as a whole: ``GovernanceService``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mnemo_server.domain.commands import Command
from mnemo_server.domain.governance import ConsentChange, ConsentState, MemorySettings
from mnemo_server.domain.user_data import UserData

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
class ImportUserData(Command[None]):
    """Load ``data`` into a user who has none, in one transaction of its
    own. Raises ``IMPORT_TARGET_NOT_EMPTY``, ``NotFound``."""

    data: UserData

    @property
    def alone(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class DeleteUserData(Command[Mapping[str, int]]):
    """Erase every row of the user, in one transaction of its own; the rows
    deleted per table. Idempotent (zeros the second time)."""

    @property
    def alone(self) -> bool:
        return True
