"""What the durable tool-call record costs (issue 30 item 2; in the run's journal since issue
37): one call recorded, claimed, run (a tool that returns at once) and its result stored, three
transactions on the Firestore emulator; and a re-executed step's rounds taken from the journal
(``journal.revisiting``: one query a round, no tool run).

    python -m bench.tool_calls [--calls 40] [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from bench.stack import Stack, dist, machine, say
from functions import journal
from functions.conductor.tool_calls import StepTools
from shared.llm.base import ToolCall
from shared.llm.tools import tool_from_function

RUN = "conversations/bench-tools"


def echo(text: str) -> str:
    """
    Returns its argument.

    :param text: Anything.
    """
    return text


def _tools(step: str) -> StepTools:
    tools = {"echo": tool_from_function(echo)}
    return StepTools(f"{RUN}/steps/{step}", "agent", tools)


def measure(calls: int, rounds: int) -> dict[str, Any]:
    per_call: list[float] = []
    for i in range(calls):
        tools = _tools(f"{i:04d}")
        t0 = time.perf_counter()
        tools.answer((ToolCall(f"c{i}", "echo", {"text": "x"}),), "", f"call-{i}")
        per_call.append((time.perf_counter() - t0) * 1000)
    recorded = _tools("replayed")
    for r in range(rounds):
        recorded.answer((ToolCall(f"r{r}", "echo", {"text": str(r)}),), "", f"round-{r}")
    ran = journal.tools_ran[RUN]
    replays: list[float] = []
    with journal.revisiting(True):
        for _ in range(calls):
            again = _tools("replayed")
            t0 = time.perf_counter()
            for r in range(rounds):
                again.answer((ToolCall(f"r{r}", "echo", {"text": str(r)}),), "", f"round-{r}")
            replays.append((time.perf_counter() - t0) * 1000)
    assert journal.tools_ran[RUN] == ran  # taken from the journal, not run
    return {
        "callMs": dist(per_call),
        "replayMs": dist(replays),
        "replayedRounds": rounds,
        "transactionsPerCall": 3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with Stack() as stack, stack.runtime("tool-calls"):
        say(f"tool calls: {args.calls} recorded calls, re-executions of {args.rounds} rounds")
        result = {"machine": machine(), **measure(args.calls, args.rounds)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
