"""An ADK ``Runner`` with a scripted model on ``MnemoSessionService``, restarted between turns.

Turn 1: the user introduces herself; the model calls a tool that keeps her
name in ``user:`` state (and a ``temp:`` note), then answers (kept in session
state by ``output_key``). Then the runner, its agent, model and session
service are all made anew (a fresh channel to the same server). Turn 2: the
model must see turn 1's conversation in its request (history read back from
Mnemo) and the tool's ``user:`` state.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import Field

from mnemo.integrations.adk import MnemoSessionService

APP = "runner-app"


class ScriptedLlm(BaseLlm):
    """Answers each model turn with the next scripted content; keeps the requests."""

    script: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        yield LlmResponse(content=self.script.pop(0))


def remember_name(name: str, tool_context: ToolContext) -> dict[str, Any]:
    """Keep the user's name."""
    tool_context.state["user:name"] = name
    tool_context.state["temp:scratch"] = "not stored"
    return {"ok": True}


def model_says(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def runner_with(
    target: str, script: list[types.Content]
) -> tuple[Runner, ScriptedLlm, MnemoSessionService]:
    model = ScriptedLlm(model="scripted", script=script)
    agent = LlmAgent(
        name="assistant",
        model=model,
        instruction="Be brief.",
        tools=[remember_name],
        output_key="last_reply",
    )
    service = MnemoSessionService(target)
    return Runner(agent=agent, app_name=APP, session_service=service), model, service


def texts(request: LlmRequest) -> list[str]:
    return [part.text for content in request.contents for part in content.parts or [] if part.text]


async def say(runner: Runner, user_id: str, session_id: str, text: str) -> list[str]:
    replies: list[str] = []
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(
        user_id=user_id, session_id=session_id, new_message=message
    ):
        if event.content and event.content.parts:
            replies += [part.text for part in event.content.parts if part.text]
    return replies


async def test_two_turns_across_a_restart(server: Any) -> None:
    user_id = f"runner-{uuid.uuid4().hex[:10]}"
    call = types.Part(function_call=types.FunctionCall(name="remember_name", args={"name": "Ada"}))
    runner, model, service = runner_with(
        server.target, [types.Content(role="model", parts=[call]), model_says("Hello Ada.")]
    )
    session = await service.create_session(app_name=APP, user_id=user_id)
    assert await say(runner, user_id, session.id, "Hi, I am Ada.") == ["Hello Ada."]
    assert len(model.requests) == 2
    await runner.close()
    await service.close()

    runner, model, service = runner_with(server.target, [model_says("Your name is Ada.")])
    stored = await service.get_session(app_name=APP, user_id=user_id, session_id=session.id)
    assert stored is not None
    assert stored.state == {"user:name": "Ada", "last_reply": "Hello Ada."}
    assert [e.author for e in stored.events] == ["user", "assistant", "assistant", "assistant"]
    assert await say(runner, user_id, session.id, "What is my name?") == ["Your name is Ada."]
    (request,) = model.requests
    seen = texts(request)
    assert seen[0] == "Hi, I am Ada." and "Hello Ada." in seen and seen[-1] == "What is my name?"
    assert any(
        part.function_response is not None and part.function_response.name == "remember_name"
        for content in request.contents
        for part in content.parts or []
    )
    after = await service.get_session(app_name=APP, user_id=user_id, session_id=session.id)
    assert after is not None
    assert len(after.events) == 6
    assert after.state["last_reply"] == "Your name is Ada."
    assert "temp:scratch" not in after.state
    await runner.close()
    await service.close()
