"""A step's tool calls on the real Firestore emulator, recorded in the conversation's journal
(``{run}/journal/{request key}.{pp}``): each round recorded before any tool runs, each call run
once however often the step is delivered, a call cut off by a crash marked interrupted (and not
run again), a racing delivery continuing from the round recorded first, and the model's turns
through ``model_call.ask``: a re-execution takes the replies and the tools' results from the
journal, asking and running nothing again."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from google.cloud import firestore

from functions import journal
from functions.agents.model_call import CallSite, ask
from functions.conductor.tool_calls import StepTools, ToolCallFailed
from functions.journal import ToolCallStatus, tool_call_key
from shared.llm import providers
from shared.llm.base import ModelReply, ModelRequest, ToolCall, Usage
from shared.llm.tools import Tool, tool_from_function
from shared.models import AgentModelSettings, ApiType, MediatorProfile, ProfileAgentConfig

pytestmark = pytest.mark.usefixtures("clean")

CID, STEP = "conv-tools", "0001"
JOURNAL = f"conversations/{CID}/journal"
ASKED = "k" * 40
"""The journal key of the request whose reply made the calls."""


class Counted:
    """Tools that count their runs (a lock: deliveries may run in threads)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

        def lookup(city: str) -> str:
            """
            The weather in a city.

            :param city: The city.
            """
            with self.lock:
                self.runs.append(("lookup", {"city": city}))
            return f"sunny in {city}"

        def explode(reason: str) -> str:
            """
            Always raises.

            :param reason: Why.
            """
            with self.lock:
                self.runs.append(("explode", {"reason": reason}))
            raise RuntimeError(f"exploded: {reason}")

        self.tools: dict[str, Tool] = {
            t.spec.name: t for t in map(tool_from_function, (lookup, explode))
        }

    def step(self) -> StepTools:
        """A delivery of the step: a fresh run, as after a redelivery or a restart."""
        return StepTools(f"conversations/{CID}/steps/{STEP}", "agent", self.tools)


def _docs(db: firestore.Client) -> list[dict[str, Any]]:
    """The tool calls in the journal (a recorded reply has no ``kind``)."""
    docs = db.collection(JOURNAL).where(filter=firestore.FieldFilter("kind", "==", "toolCall"))
    return sorted((d.to_dict() for d in docs.get()), key=lambda d: (d["round"], d["position"]))


def test_a_redelivered_step_continues_from_its_recorded_calls(db: firestore.Client) -> None:
    counted = Counted()
    calls = (ToolCall("c1", "lookup", {"city": "Oslo"}), ToolCall("c2", "explode", {"reason": "x"}))
    first = counted.step()
    asked, results = first.answer(calls, "checking", ASKED)
    assert [r.content for r in results.tool_results] == [
        "sunny in Oslo",
        "ERROR: Tool 'explode' execution failed: exploded: x. Please correct your input and "
        "try again.",
    ]
    assert [r.is_error for r in results.tool_results] == [False, True]
    stored = _docs(db)
    assert [(d["name"], d["status"]) for d in stored] == [("lookup", "done"), ("explode", "failed")]
    assert [d["key"] for d in stored] == [tool_call_key(ASKED, 0), tool_call_key(ASKED, 1)]
    assert {d["step"] for d in stored} == {f"conversations/{CID}/steps/{STEP}"}
    assert all(d["expireAt"] > d["createdAt"] for d in stored)  # the journal's retention
    # the step delivered again (the first delivery died after its tools ran): the same request
    # gets the recorded round, whatever its reply says now
    reused = journal.tools_reused[f"conversations/{CID}"]
    again = counted.step()
    assert again.answer(calls[:1], "", ASKED) == (asked, results)
    assert again.rounds == 1
    assert len(counted.runs) == 2  # each tool ran once
    assert journal.tools_reused[f"conversations/{CID}"] == reused + 2


def test_a_call_cut_off_by_a_crash_is_interrupted_not_run_again(db: firestore.Client) -> None:
    counted = Counted()
    dead = counted.step()
    # the dead run recorded the round and claimed the call, then died inside the tool
    calls = (ToolCall("c1", "lookup", {"city": "Oslo"}),)
    dead._record(ASKED, 0, calls, "")
    where = dead.path(tool_call_key(ASKED, 0))
    claimed = dead._move(where, ToolCallStatus.REQUESTED, {"status": ToolCallStatus.RUNNING.value})
    assert claimed.status == ToolCallStatus.RUNNING
    turns = counted.step().answer(calls, "", ASKED)
    assert counted.runs == []
    result = turns[1].tool_results[0]
    assert result.is_error and "was not run again" in result.content
    assert _docs(db)[0]["status"] == "interrupted"
    # the dead run's late result (had it lived on) does not overwrite what the model read
    late = dead._move(
        where,
        ToolCallStatus.RUNNING,
        {"status": ToolCallStatus.DONE.value, "result": "late"},
        mine=True,
    )
    assert late.status == ToolCallStatus.INTERRUPTED and _docs(db)[0]["result"] != "late"


def test_a_recorded_call_not_yet_claimed_runs_on_the_next_delivery(db: firestore.Client) -> None:
    counted = Counted()
    calls = (ToolCall("c1", "lookup", {"city": "Rome"}),)
    counted.step()._record(ASKED, 0, calls, "")
    turns = counted.step().answer(calls, "", ASKED)
    assert turns[1].tool_results[0].content == "sunny in Rome"
    assert counted.runs == [("lookup", {"city": "Rome"})]


def test_racing_deliveries_take_the_round_recorded_first(db: firestore.Client) -> None:
    counted = Counted()
    one, two = counted.step(), counted.step()
    first = one.answer((ToolCall("a", "lookup", {"city": "Oslo"}),), "", ASKED)
    second = two.answer((ToolCall("b", "lookup", {"city": "Lima"}),), "", ASKED)
    assert first == second  # the second delivery's model turn is dropped for the recorded one
    assert counted.runs == [("lookup", {"city": "Oslo"})]


class ToolThenAnswer:
    """A model that calls ``lookup`` until a tool result is in the conversation, then answers
    with the result it read; counts its calls."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def generate(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        results = [r for m in request.history for r in m.tool_results]
        if not results:
            call = ToolCall(f"call{len(self.requests)}", "lookup", {"city": "Oslo"})
            return ModelReply("", Usage(5, 5), tool_calls=(call,))
        return ModelReply(json.dumps({"answer": results[-1].content}), Usage(5, 5))


def _site() -> CallSite:
    settings = AgentModelSettings(api_type=ApiType.SCRIPTED, model_name="scripted")
    speaker = MediatorProfile(
        private_id=f"{CID}.agent",
        public_id="agent",
        name="agent",
        type="agent",
        agent_config=ProfileAgentConfig(agent_id="agent", model_settings=settings),
    )
    return CallSite(
        experiment_id=CID,
        participant=speaker,
        stage_id=STEP,
        description="tools",
        log_collection=f"conversations/{CID}/steps/{STEP}/attempts",
    )


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}


def test_a_re_executed_step_takes_its_replies_and_tool_results_from_the_journal(
    db: firestore.Client,
) -> None:
    """A re-execution (``journal.revisiting``: a later attempt, a takeover) asks the model
    nothing and runs no tool: both replies and the tool's result come from the journal."""
    db.document(f"conversations/{CID}").set({"query": "q", "status": "RUNNING"})
    counted, model = Counted(), ToolThenAnswer()
    run = f"conversations/{CID}"
    with providers.wrapped(lambda _client: model):
        first = ask(_site(), "weather?", SCHEMA, lambda v: v, tools=counted.step())
        taken, reused = journal.taken[run], journal.tools_reused[run]
        with journal.revisiting(True):
            again = ask(_site(), "weather?", SCHEMA, lambda v: v, tools=counted.step())
    assert first == again == {"answer": "sunny in Oslo"}
    assert counted.runs == [("lookup", {"city": "Oslo"})]
    assert len(model.requests) == 2  # the first execution's: the re-execution asked nothing
    assert (journal.taken[run] - taken, journal.tools_reused[run] - reused) == (2, 1)
    kinds = sorted(d.to_dict().get("kind", "reply") for d in db.collection(JOURNAL).get())
    assert kinds == ["reply", "reply", "toolCall"]  # one place for all that happened
    logged = [
        d.to_dict()["response"]["status"] for d in db.collection(_site().log_collection).get()
    ]
    assert sorted(logged) == ["OK", "TOOL_CALLS"]  # a reused reply is not logged again


def test_ask_runs_the_tool_once_across_deliveries(db: firestore.Client) -> None:
    """A duplicate that does not look in the journal (work outside a unit) asks the model
    again, but the round is keyed by the request: the same request finds the recorded round,
    and its tool is not run again."""
    db.document(f"conversations/{CID}").set({"query": "q", "status": "RUNNING"})
    counted, model = Counted(), ToolThenAnswer()
    with providers.wrapped(lambda _client: model):
        first = ask(_site(), "weather?", SCHEMA, lambda v: v, tools=counted.step())
        again = ask(_site(), "weather?", SCHEMA, lambda v: v, tools=counted.step())
    assert first == again == {"answer": "sunny in Oslo"}
    assert counted.runs == [("lookup", {"city": "Oslo"})]
    # the duplicate's model called the tool anew (call3): the recorded call (call1) was taken
    assert len(model.requests) == 4
    replayed = model.requests[3]
    assert [m.role for m in replayed.history] == ["assistant", "tool"]
    assert replayed.history == model.requests[1].history
    assert replayed.history[0].tool_calls[0].id == "call1"
    assert replayed.tools and replayed.tools[0].name == "lookup"


def test_a_heuristic_sequences_call_tool_runs_each_call_once(db: firestore.Client) -> None:
    """Diskurs' ``call_tool`` for code: the step's k-th call is recorded; a redelivered step's
    sequence, calling again, gets the recorded values (and the recorded failure) back."""
    counted = Counted()

    async def sequence(tools: StepTools) -> tuple[Any, str]:
        weather = await tools.call_tool("lookup", {"city": "Oslo"})
        try:
            await tools.call_tool("explode", {"reason": "why not"})
        except ToolCallFailed as error:
            return weather, str(error)
        return weather, ""

    first = asyncio.run(sequence(counted.step()))
    again = asyncio.run(sequence(counted.step()))
    assert first == again == ("sunny in Oslo", again[1])
    assert "exploded: why not" in again[1]
    assert counted.runs == [("lookup", {"city": "Oslo"}), ("explode", {"reason": "why not"})]
    assert [(d["name"], d["status"]) for d in _docs(db)] == [
        ("lookup", "done"),
        ("explode", "failed"),
    ]


def test_runaway_calls_are_answered_with_an_error_not_run(db: firestore.Client) -> None:
    """A turn of more calls than a round runs, or arguments too large to store: the model
    reads why, no tool runs for them, and the round is still one transaction."""
    counted = Counted()
    huge = ToolCall("h", "lookup", {"city": "x" * 200_000})
    many = tuple(ToolCall(f"c{i}", "lookup", {"city": f"C{i}"}) for i in range(24))
    _, results = counted.step().answer((huge, *many), "", ASKED)
    assert len(results.tool_results) == 25
    assert [r.is_error for r in results.tool_results] == [True] + [False] * 19 + [True] * 5
    assert "over 100,000" in results.tool_results[0].content
    assert "more than 20 calls in one turn" in results.tool_results[20].content
    assert len(counted.runs) == 19
    assert len(_docs(db)) == 25
