"""A phone and a laptop, two processes, share one ``MnemoSession``: the laptop's agent
run sees the phone's turn (its question, tool call, tool output and answer)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from mnemo.integrations.openai_agents import MnemoSession

DEVICE = Path(__file__).with_name("agents_device.py")


def _run(device: str, target: str, user: str, session_id: str) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(DEVICE),
            device,
            "--target",
            target,
            "--user",
            user,
            "--session",
            session_id,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _said(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, what) of each item: role and text, or the tool call / output."""
    out = []
    for item in items:
        if item.get("type") == "function_call":
            out.append(("call", item["name"]))
        elif item.get("type") == "function_call_output":
            out.append(("output", item["output"]))
        else:
            content = item["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            out.append((item["role"], text))
    return out


def test_the_laptop_continues_the_phones_conversation(mnemo_target: str) -> None:
    user, session_id = f"u-{uuid.uuid4().hex[:12]}", "car-chat"

    phone = _run("phone", mnemo_target, user, session_id)
    laptop = _run("laptop", mnemo_target, user, session_id)

    assert phone["final_output"] == "Level 3, spot 42."
    assert _said(phone["model_input"]) == [("user", "Where did I park?")]
    assert laptop["final_output"] == "Level 3."
    phones_turn = [
        ("user", "Where did I park?"),
        ("call", "find_car"),
        ("output", "level 3, spot 42"),
        ("assistant", "Level 3, spot 42."),
    ]
    assert _said(laptop["model_input"]) == [*phones_turn, ("user", "Which level was it again?")]
    with MnemoSession(session_id, user=user, target=mnemo_target) as session:
        stored = asyncio.run(session.get_items())
    assert _said(stored) == [
        *phones_turn,
        ("user", "Which level was it again?"),
        ("assistant", "Level 3."),
    ]
    assert stored[:4] == laptop["model_input"][:4]  # what the model saw is what was stored
