"""A LangGraph graph (no LLM) checkpointed with ``MnemoSaver``, interrupted
in one process (a phone) and resumed in another (a laptop).

The graph ``plan -> approve -> act`` asks for approval with ``interrupt()``
in ``approve``. The first process runs it with the sync API until the
interrupt and reports what it asks; the second, a fresh process with the
async API and only the thread id in common, resumes it with
``Command(resume="yes")``. The run passes when the second process finishes
the graph from the first one's checkpoint: ``plan`` ran once (in the first
process), ``approve`` got the answer, ``act`` ran, and the thread's history,
read back through ``MnemoSaver.list``, spans both processes.

    python tests/peers/langgraph_interrupt_resume.py     # MNEMO_TARGET=host:port

Run by ``make test-langgraph`` beside a live server.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import subprocess
import sys
import uuid
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from mnemo.integrations.langgraph import MnemoSaver

TARGET = os.environ.get("MNEMO_TARGET", "127.0.0.1:50051")
USER = "langgraph-demo"
STEP_TIMEOUT_S = 60


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _plan(state: State) -> dict[str, Any]:
    return {"steps": [f"plan in {os.getpid()}"]}


def _approve(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "go ahead?", "after": state["steps"]})
    return {"steps": [f"approve:{answer}"]}


def _act(state: State) -> dict[str, Any]:
    return {"steps": [f"act in {os.getpid()}"]}


def _graph(saver: MnemoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("plan", _plan)
    builder.add_node("approve", _approve)
    builder.add_node("act", _act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approve")
    builder.add_edge("approve", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


def phone(thread_id: str) -> dict[str, Any]:
    """Run until the interrupt (sync API)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    with MnemoSaver.from_target(TARGET, user=USER) as saver:
        graph = _graph(saver)
        result = graph.invoke(State(steps=[]), config)
        (asked,) = result["__interrupt__"]
        return {
            "pid": os.getpid(),
            "asked": asked.value,
            "next": list(graph.get_state(config).next),
        }


async def laptop(thread_id: str) -> dict[str, Any]:
    """Resume from the stored checkpoint (async API)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    async with MnemoSaver.afrom_target(TARGET, user=USER) as saver:
        graph = _graph(saver)
        waiting = await graph.aget_state(config)
        answer: Command[Any] = Command(resume="yes")
        result = await graph.ainvoke(answer, config)
        history = [s async for s in graph.aget_state_history(config)]
        return {
            "pid": os.getpid(),
            "waiting_at": list(waiting.next),
            "steps": result["steps"],
            "history": len(history),
            "finished": not (await graph.aget_state(config)).next,
        }


def _child(role: str, thread_id: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, role, thread_id],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {role} process failed:\n{done.stderr[-4000:]}")
    reported: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return reported


def main() -> int:
    thread_id = f"trip-{uuid.uuid4()}"
    first = _child("phone", thread_id)
    second = _child("laptop", thread_id)
    print(json.dumps({"phone": first, "laptop": second}, indent=2))
    steps = second["steps"]
    problems = [
        problem
        for problem, bad in (
            ("the phone did not stop at approve", first["next"] != ["approve"]),
            ("the interrupt lost its payload", first["asked"]["question"] != "go ahead?"),
            ("the laptop did not find the waiting graph", second["waiting_at"] != ["approve"]),
            (
                "not plan on the phone, the answer, act on the laptop",
                steps != [f"plan in {first['pid']}", "approve:yes", f"act in {second['pid']}"],
            ),
            ("both ran in one process", first["pid"] == second["pid"]),
            ("the graph did not finish", not second["finished"]),
            ("the history does not span both", second["history"] < 5),
        )
        if bad
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    print("interrupt/resume across processes:", "FAILED" if problems else "passed")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "phone":
        print(json.dumps(phone(sys.argv[2])))
    elif len(sys.argv) == 3 and sys.argv[1] == "laptop":
        print(json.dumps(asyncio.run(laptop(sys.argv[2]))))
    else:
        sys.exit(main())
