"""End to end: an OpenAI Agents SDK agent uses Mnemo's memory through ``mnemo mcp``.

The agent's model is scripted and offline (``ScriptedModel``: each step reads
the tool outputs the SDK fed back and decides the next call or the answer),
so the test checks the wiring, not a model: the SDK launches ``mnemo mcp``
over stdio (``agents.mcp.MCPServerStdio``), lists its tools for the model,
calls them, and passes their results (and their errors) back.

Runs in the peers' venv, where ``openai-agents`` is installed
(``make test-openai-agents``); skipped where it is not. It starts its own
Mnemo server, and ``mnemo mcp``, with the project's Python
(``$MNEMO_SERVER_PYTHON``, default ``.venv/bin/python``: the server and the
``mcp`` SDK live there); only ``mnemo-client`` is needed here, to set up and
check what the tools stored.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="runs in the peers' venv (make test-openai-agents)")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from agents.mcp import MCPServerStdio
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from mnemo.client import MnemoClient, UnavailableError
from mnemo.v1 import memories_pb2 as mm

REPO = Path(__file__).resolve().parents[2]
PYTHON = os.environ.get("MNEMO_SERVER_PYTHON", str(REPO / ".venv" / "bin" / "python"))
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
TOOLS = {
    "memory_save",
    "memory_recall",
    "memory_list",
    "memory_update",
    "memory_delete",
    "memory_context",
    "working_memory_get",
    "working_memory_remember",
}
_SERVING_ON = re.compile(r" serving on (\S+):(\d+) ")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def mnemo_target() -> Iterator[str]:
    """A real ``mnemo serve`` on a throwaway SQLite file, 127.0.0.1, a free port."""
    workdir = Path(tempfile.mkdtemp(prefix="mnemo-mcp-agent-"))
    log = workdir / "mnemo-serve.log"
    database = f"sqlite:///{workdir / 'mnemo.db'}"
    command = [PYTHON, "-m", "mnemo_server", "serve", "--listen", "127.0.0.1:0"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--database-url", database],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := _SERVING_ON.search(log.read_text(errors="replace"))):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        target = f"127.0.0.1:{found.group(2)}"
        with MnemoClient(target, timeout=5) as probe:
            while True:
                try:
                    probe.get_memory_state("readiness-probe")
                    break
                except UnavailableError:
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
        yield target
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


@pytest.fixture
def user() -> str:
    return f"agent-{uuid.uuid4().hex[:12]}"


# ------------------------------------------------------------ the scripted model

Step = Callable[[list[dict[str, Any]]], list[Any]]


class ScriptedModel(Model):
    """Plays ``steps`` in order, one per model call; a step gets the run's input
    items so far (tool outputs included) and returns the output items."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.tool_names: list[set[str]] = []

    async def get_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.tool_names.append({tool.name for tool in tools})
        items = [{"type": "message", "content": input}] if isinstance(input, str) else input
        output = self.steps.pop(0)(list(items))
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def call(name: str, arguments: dict[str, Any]) -> Step:
    """A step that calls the tool ``name`` (call id: the tool's name)."""

    def step(items: list[dict[str, Any]]) -> list[Any]:
        return [
            ResponseFunctionToolCall(
                type="function_call", call_id=name, name=name, arguments=json.dumps(arguments)
            )
        ]

    return step


def answer(compose: Callable[[Callable[[str], str]], str]) -> Step:
    """A step that answers with ``compose(output_of)``; ``output_of(call_id)``
    is the text the SDK fed back for that tool call."""

    def step(items: list[dict[str, Any]]) -> list[Any]:
        outputs = {
            item["call_id"]: item["output"]
            for item in items
            if item.get("type") == "function_call_output"
        }

        def output_of(call_id: str) -> str:
            value = outputs[call_id]
            if isinstance(value, str):
                return value
            # A list of content parts: the MCP result's text blocks.
            return "".join(part["text"] for part in value if part.get("type") == "input_text")

        text = compose(output_of)
        return [
            ResponseOutputMessage(
                id=f"msg-{uuid.uuid4().hex[:8]}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        ]

    return step


def mnemo_mcp(target: str, user: str) -> MCPServerStdio:
    """``mnemo mcp`` for ``user``, launched by the Agents SDK over stdio."""
    return MCPServerStdio(
        params={
            "command": PYTHON,
            "args": ["-m", "mnemo_server", "mcp", "--target", target, "--user", user],
        },
        name="mnemo",
        cache_tools_list=True,
        # Starting the command imports the MCP SDK and the client: seconds on a busy machine.
        client_session_timeout_seconds=60,
    )


async def run(agent: Agent[Any], message: str) -> str:
    result = await Runner.run(agent, message, run_config=RunConfig(tracing_disabled=True))
    return str(result.final_output)


# -------------------------------------------------------------------- the tests


@pytest.mark.asyncio
async def test_an_agent_saves_and_recalls_through_mnemo_mcp(mnemo_target: str, user: str) -> None:
    model = ScriptedModel(
        [
            call("memory_save", {"text": "Lives in Bergen", "key": "home"}),
            answer(lambda out: "Saved " + json.loads(out("memory_save"))["memory"]["id"]),
            call("memory_recall", {"query": "where do I live", "limit": 3}),
            answer(
                lambda out: (
                    "You: "
                    + "; ".join(
                        hit["memory"]["text"] for hit in json.loads(out("memory_recall"))["hits"]
                    )
                )
            ),
        ]
    )
    async with mnemo_mcp(mnemo_target, user) as server:
        agent = Agent(
            name="assistant", instructions="Use memory.", model=model, mcp_servers=[server]
        )
        saved = await run(agent, "I moved to Bergen, remember that.")
        recalled = await run(agent, "Where do I live?")
    assert model.steps == [] and all(TOOLS <= names for names in model.tool_names)
    with MnemoClient(mnemo_target) as mnemo:
        stored = list(mnemo.list_memories(user))
    assert [(m.text, m.key, m.source) for m in stored] == [
        ("Lives in Bergen", "home", mm.MEMORY_SOURCE_TOOL_CALL)
    ]
    assert saved == "Saved " + stored[0].name.rpartition("/")[2]
    assert recalled == "You: Lives in Bergen"


@pytest.mark.asyncio
async def test_a_governance_refusal_reaches_the_agent_as_a_tool_error(
    mnemo_target: str, user: str
) -> None:
    with MnemoClient(mnemo_target) as mnemo:
        mnemo.set_consent(user, "withdrawn")
    model = ScriptedModel(
        [call("memory_save", {"text": "Likes jazz"}), answer(lambda out: out("memory_save"))]
    )
    async with mnemo_mcp(mnemo_target, user) as server:
        agent = Agent(
            name="assistant", instructions="Use memory.", model=model, mcp_servers=[server]
        )
        told = await run(agent, "Remember that I like jazz.")
    assert "MEMORY_CONSENT_WITHDRAWN" in told and f"users/{user} has withdrawn consent" in told
    with MnemoClient(mnemo_target) as mnemo:
        assert list(mnemo.list_memories(user)) == []
