"""Mnemo as the session memory of the OpenAI Agents SDK (``openai-agents``).

    from mnemo.integrations.openai_agents import MnemoSession

    session = MnemoSession("conv_123", user="alice", target="mnemo:50051", token=token)
    result = await Runner.run(agent, "Hello", session=session)

Needs the ``openai-agents`` extra: ``pip install 'mnemo-client[openai-agents]'``.
See docs/integrations/openai-agents.md.
"""

from __future__ import annotations

try:
    import agents as _agents  # noqa: F401  (the SDK: fail here, with the fix, if it is missing)
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mnemo.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'mnemo-client[openai-agents]'"
    ) from error

from mnemo.integrations.openai_agents._items import ITEM_KEY, conversation_id
from mnemo.integrations.openai_agents._session import MnemoSession

__all__ = ["ITEM_KEY", "MnemoSession", "conversation_id"]
