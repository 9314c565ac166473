"""Working-memory use cases (goliath): policy on top of ``WorkingMemoryStore``.

Input is validated at the edge (names, sizes); here live the settings-driven
rules: the summary word budget, the default and largest ``keep_recent`` and
the largest saved ``recent`` list.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_server.config import Settings
from mnemo_server.domain.errors import FieldViolation, InvalidArgument
from mnemo_server.domain.models import (
    ConversationKey,
    Exchange,
    Idempotency,
    MemoryState,
    RememberResult,
)
from mnemo_server.domain.working_memory import check_summary_budget
from mnemo_server.store.interfaces import WorkingMemoryStore


def _expected(etag: str) -> str | None:
    """An empty etag on the wire means "unconditional"."""
    return etag or None


class WorkingMemory:
    """Get, save, remember and clear the working memory of a conversation."""

    def __init__(self, store: WorkingMemoryStore, settings: Settings) -> None:
        self._store = store
        self._settings = settings

    def keep_recent(self, requested: int, field: str = "keep_recent") -> int:
        """0 -> the server default; 1..recent_max as asked; else ``INVALID_FIELD``."""
        if requested == 0:
            return self._settings.recent_default
        if not 1 <= requested <= self._settings.recent_max:
            limit = self._settings.recent_max
            raise InvalidArgument(
                f"{field} must be between 1 and {limit} (0 means the default "
                f"{self._settings.recent_default}); got {requested}",
                reason="INVALID_FIELD",
                metadata={"field": field, "max": str(limit)},
                violations=(FieldViolation(field, f"must be in 0..{limit}"),),
            )
        return requested

    async def get(self, key: ConversationKey) -> MemoryState:
        """The state; an empty one with an empty etag if never written."""
        return await self._store.get_state(key)

    async def save(
        self, key: ConversationKey, summary: str, recent: Sequence[Exchange], etag: str
    ) -> MemoryState:
        """Replace the state. Raises ``SUMMARY_OVER_BUDGET``, ``FIELD_TOO_LARGE``
        (more than ``recent_max`` exchanges), ``ETAG_MISMATCH``."""
        check_summary_budget(
            summary, self._settings.summary_max_words, field="memory_state.summary"
        )
        if len(recent) > self._settings.recent_max:
            limit = self._settings.recent_max
            raise InvalidArgument(
                f"memory_state.recent has {len(recent)} exchanges; at most {limit} are kept",
                reason="FIELD_TOO_LARGE",
                metadata={"field": "memory_state.recent", "limit": str(limit)},
                violations=(FieldViolation("memory_state.recent", f"at most {limit} exchanges"),),
            )
        return await self._store.save_state(key, summary, recent, expected_etag=_expected(etag))

    async def remember(
        self,
        key: ConversationKey,
        exchange: Exchange,
        *,
        keep_recent: int,
        summary: str | None,
        etag: str,
        idempotency: Idempotency | None,
    ) -> RememberResult:
        """Append ``exchange``, keep the newest ``keep_recent`` (0: default) and
        return the evicted ones. Raises ``INVALID_FIELD`` (keep_recent),
        ``SUMMARY_OVER_BUDGET``, ``ETAG_MISMATCH``, ``REQUEST_ID_REUSED``."""
        keep = self.keep_recent(keep_recent)
        if summary is not None:
            check_summary_budget(summary, self._settings.summary_max_words, field="summary")
        return await self._store.remember(
            key,
            exchange,
            keep_recent=keep,
            summary=summary,
            expected_etag=_expected(etag),
            idempotency=idempotency,
        )

    async def clear(self, key: ConversationKey, etag: str) -> MemoryState:
        """Empty the state. Raises ``ETAG_MISMATCH``."""
        return await self._store.clear_state(key, expected_etag=_expected(etag))
