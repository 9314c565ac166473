"""Mnemo as the session and memory services of Google's Agent Development Kit (``google-adk``).

    from mnemo.integrations.adk import MnemoMemoryService, MnemoSessionService

    runner = Runner(
        agent=agent,
        app_name="travel",
        session_service=MnemoSessionService("mnemo:50051", token=token),
        memory_service=MnemoMemoryService("mnemo:50051", token=token),
    )

``register()`` names both for ADK's service URIs (``mnemo://host:port``).
Needs the ``adk`` extra: ``pip install 'mnemo-client[adk]'``. See
docs/integrations/adk.md.
"""

from __future__ import annotations

try:
    import google.adk as _adk  # noqa: F401  (the SDK: fail here, with the fix, if it is missing)
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mnemo.integrations.adk needs Google's Agent Development Kit: "
        "pip install 'mnemo-client[adk]'"
    ) from error

from mnemo.integrations.adk._events import conversation_id
from mnemo.integrations.adk._memory import MnemoMemoryService
from mnemo.integrations.adk._registry import SCHEME, register, target_of
from mnemo.integrations.adk._sessions import MnemoSessionService

__all__ = [
    "SCHEME",
    "MnemoMemoryService",
    "MnemoSessionService",
    "conversation_id",
    "register",
    "target_of",
]
