"""One device's turn of an agent over a shared ``MnemoSession``, in its own process.

    python tests/peers/agents_device.py phone|laptop --target HOST:PORT --user U --session S

``Runner.run`` with the SDK's offline ``ScriptedModel`` (no network but the
Mnemo server on 127.0.0.1). The phone asks where the car is, the model calls
the ``find_car`` tool and answers; the laptop asks a follow-up. Prints, as
JSON, the input the model got on the device's first call and the final output.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from mnemo.integrations.openai_agents import MnemoSession


@function_tool
def find_car() -> str:
    """Where the car is parked."""
    return "level 3, spot 42"


SCRIPTS = {
    "phone": (
        "Where did I park?",
        [
            [function_call("find_car", {}, call_id="call_phone_1", item_id="fc_phone_1")],
            [assistant_message("Level 3, spot 42.", item_id="msg_phone_1")],
        ],
    ),
    "laptop": (
        "Which level was it again?",
        [[assistant_message("Level 3.", item_id="msg_laptop_1")]],
    ),
}


async def turn(device: str, target: str, user: str, session_id: str) -> dict[str, object]:
    question, steps = SCRIPTS[device]
    model = ScriptedModel(steps)
    agent = Agent(name=f"assistant-on-{device}", model=model, tools=[find_car])
    with MnemoSession(session_id, user=user, target=target) as session:
        result = await Runner.run(agent, question, session=session)
    first = model.calls[0]
    return {"final_output": result.final_output, "model_input": first.input}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device", choices=sorted(SCRIPTS))
    parser.add_argument("--target", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--session", required=True)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(turn(args.device, args.target, args.user, args.session))))


if __name__ == "__main__":
    main()
