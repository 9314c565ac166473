"""Channel options: retry of ``UNAVAILABLE`` through the gRPC service config."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

#: Every service of the ``mnemo.v1`` contract.
SERVICES = (
    "mnemo.v1.WorkingMemoryService",
    "mnemo.v1.ConversationService",
    "mnemo.v1.MemoryService",
    "mnemo.v1.GovernanceService",
    "mnemo.v1.SyncService",
    "mnemo.v1.CheckpointService",
)

#: gRPC caps ``maxAttempts`` at 5 (the first attempt included).
MAX_ATTEMPTS = 5

ChannelOption = tuple[str, Any]


def service_config(max_attempts: int) -> dict[str, Any]:
    """Retry ``UNAVAILABLE`` up to ``max_attempts`` attempts, with exponential backoff.

    Safe for writes too: the client gives every write that creates or appends
    a request id, so a retried write is applied at most once, and the other
    writes are idempotent or conditional.
    """
    return {
        "methodConfig": [
            {
                "name": [{"service": service} for service in SERVICES],
                "retryPolicy": {
                    "maxAttempts": max_attempts,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "2s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }


def channel_options(
    max_attempts: int, options: Sequence[ChannelOption] = ()
) -> list[ChannelOption]:
    """The retry options, then ``options``; an option given in ``options`` replaces ours.

    ``max_attempts`` below 2 switches retries off.
    """
    if not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise ValueError(f"max_attempts must be 1 to {MAX_ATTEMPTS}, not {max_attempts}")
    ours: list[ChannelOption] = [("grpc.enable_retries", int(max_attempts > 1))]
    if max_attempts > 1:
        ours.append(("grpc.service_config", json.dumps(service_config(max_attempts))))
    given = {name for name, _ in options}
    return [option for option in ours if option[0] not in given] + list(options)
