"""An agent's tools in a conductor workflow on the real emulators: the model calls a tool and
answers with its result, a tool that raises returns its error to the model and the conversation
goes on, a step redelivered after its tool ran does not run it again, a heuristic sequence's
``call_tool``, and a step's tool round over each provider's own HTTP protocol (a local fake of
OpenAI, Claude and Gemini 3 answering with tool calls, then with the answer).

The workflow is the example with tools added the way a workflow document holds them (Diskurs'
``tools`` entries, a project file by path: ``tests/integration/tooling/tools.py``, whose tools
log each run to a file); the model is the scripted one, which calls an offered tool, then
answers."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conductor_state import attempts, conversation, finished, start, steps
from experiment_state import settle
from tool_state import QUERY, TOOLING, WF, logging_tools, runs, tool_calls, with_tools

from emulator.chaos import ChaosSettings
from functions import journal
from shared.conductor.documents import Status
from shared.llm.base import ModelClient, ModelReply, ModelRequest
from shared.llm.scripted import generate_value
from tests.fakes import Recorded, Step
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import fake_gemini as gemini
from tests.fakes import fake_openai as openai
from tools.load_workflow import load

pytestmark = pytest.mark.usefixtures("clean")

ANSWERER_STEP = "0003"
"""The example's rules: conductor, extractor, conductor, answerer (step 3), conductor."""


@pytest.fixture
def tool_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return logging_tools(tmp_path, monkeypatch)


def test_an_agent_calls_its_tool_and_answers_with_its_result(runtime, db, tool_log):
    with_tools(db, "lookup")
    start(db, "t1", QUERY, WF)
    settle(runtime, finished(db, "t1"), rounds=5)
    conv = conversation(db, "t1")
    assert conv.status == Status.DONE, conv.error
    [call] = tool_calls(db, "t1", ANSWERER_STEP)
    assert call["name"] == "lookup" and call["status"] == "done" and not call["isError"]
    assert call["result"].startswith("sunny in ")
    assert runs(tool_log) == [f"lookup {call['result'].removeprefix('sunny in ')}"]
    tries = attempts(db, "t1", ANSWERER_STEP)
    assert [a["response"]["status"] for a in tries] == ["TOOL_CALLS", "OK"]
    assert f"lookup -> {call['result']}" in tries[1]["prompt"]  # the result reached the model
    assert tool_calls(db, "t1", "0001") == []  # the extractor has no tools
    assert [s.status for s in steps(db, "t1")] == ["done"] * 5


def test_a_tool_that_raises_returns_its_error_to_the_model(runtime, db, tool_log):
    with_tools(db, "explode")
    start(db, "t2", QUERY, WF)
    settle(runtime, finished(db, "t2"), rounds=5)
    conv = conversation(db, "t2")
    assert conv.status == Status.DONE, conv.error  # the step went on
    [call] = tool_calls(db, "t2", ANSWERER_STEP)
    assert call["status"] == "failed" and call["isError"]
    assert call["result"].startswith("ERROR: Tool 'explode' execution failed: exploded: ")
    assert call["result"].endswith("Please correct your input and try again.")
    tries = attempts(db, "t2", ANSWERER_STEP)
    assert "ERROR: Tool 'explode' execution failed" in tries[-1]["prompt"]
    assert runs(tool_log) == ["explode"]
    assert conv.error is None


class DiesAfterTheTool:
    """The model, except that the step's first request carrying a tool result kills its
    delivery (as an instance dying after the tool ran, before the step's commit)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self.killed = False

    def wrap(self, client: ModelClient) -> ModelClient:
        outer = self

        class Wrapped:
            def generate(self, request: ModelRequest) -> ModelReply:
                if request.tools:
                    outer.requests.append(request)
                if any(m.tool_results for m in request.history) and not outer.killed:
                    outer.killed = True
                    raise RuntimeError("the instance died")
                return client.generate(request)

        return Wrapped()


def test_a_redelivered_step_does_not_call_its_tool_twice(runtime, db, tool_log):
    with_tools(db, "lookup")
    model = DiesAfterTheTool()
    with runtime.model_wrapper(model.wrap):
        start(db, "t3", QUERY, WF)
        settle(runtime, finished(db, "t3"), rounds=8)
    conv = conversation(db, "t3")
    assert conv.status == Status.DONE, conv.error
    assert model.killed
    assert len(runs(tool_log)) == 1  # the tool ran once
    [call] = tool_calls(db, "t3", ANSWERER_STEP)
    assert call["status"] == "done"
    # the model was asked for the tool call once; both deliveries sent the recorded round
    asking = [r for r in model.requests if not r.history]
    answering = [r for r in model.requests if r.history]
    assert len(asking) == 1 and len(answering) == 2
    assert answering[0].history == answering[1].history
    assert answering[1].history[1].tool_results[0].content == call["result"]
    # the redelivery took the reply asking for the tool, and the tool's result, from the journal
    assert journal.taken["conversations/t3"] >= 1
    assert journal.tools_reused["conversations/t3"] == 1


HEURISTIC_CONFIG = """
first_contact: looker
llms: [{name: fake, type: scripted}]
agents:
  - name: looker
    type: heuristic_finalizer
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: looker, promptArgumentClass: LookPrompt}
    finalProperties: [weather, failure]
    tools: [lookup, explode]
tools:
  - {name: lookup, functionName: lookup, modulePath: TOOLS}
  - {name: explode, functionName: explode, modulePath: TOOLS}
"""

HEURISTIC_PROMPT = """\
from dataclasses import dataclass
from diskurs import PromptArgument


@dataclass
class LookPrompt(PromptArgument):
    weather: str = ""
    failure: str = ""


async def heuristic_sequence(conversation, call_tool, llm_client):
    arg = conversation.prompt_argument
    arg.weather = await call_tool("lookup", {"city": "Oslo"})
    try:
        await call_tool("explode", {"reason": "no reason"})
    except Exception as error:
        arg.failure = str(error)
    return conversation.update(prompt_argument=arg)
"""


def test_a_heuristic_agent_calls_its_tools_through_call_tool(
    runtime, db, tool_log, tmp_path, monkeypatch
):
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", f"{TOOLING}:{tmp_path}")
    project = tmp_path / "heuristic"
    (project / "looker").mkdir(parents=True)
    config = HEURISTIC_CONFIG.replace("TOOLS", str(TOOLING / "tools.py"))
    (project / "config.yml").write_text(config)
    (project / "looker" / "prompt.py").write_text(HEURISTIC_PROMPT)
    (project / "looker" / "agent_description.txt").write_text("looks things up")
    load(db, project, "heuristic")
    start(db, "t4", "weather?", "heuristic")
    settle(runtime, finished(db, "t4"), rounds=5)
    conv = conversation(db, "t4")
    assert conv.status == Status.DONE, conv.error
    assert conv.result["weather"] == "sunny in Oslo"
    assert "exploded: no reason" in conv.result["failure"]
    assert runs(tool_log) == ["lookup Oslo", "explode"]
    calls = tool_calls(db, "t4", "0000")
    assert [(c["name"], c["status"]) for c in calls] == [("lookup", "done"), ("explode", "failed")]


def _schema_and_state(provider: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool, bool]:
    """The reply schema a request asks for, whether it offers tools, whether it carries tool
    results, each read from the provider's own request shapes."""
    if provider == "openai":
        schema = body["response_format"]["json_schema"]["schema"]
        offered = bool(body.get("tools"))
        answered = any(m.get("role") == "tool" for m in body["messages"])
    elif provider == "claude":
        schema = next(t for t in body["tools"] if t["name"] == "response")["input_schema"]
        offered = len(body["tools"]) > 1
        blocks = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        answered = any(b.get("type") == "tool_result" for b in blocks)
    else:
        config = body["generationConfig"]
        schema = config.get("responseJsonSchema") or config.get("response_json_schema")
        offered = bool(body.get("tools"))
        parts = [p for c in body["contents"] for p in c.get("parts", [])]
        answered = any("functionResponse" in p for p in parts)
    return schema, offered, answered


FAKES: dict[str, tuple[Any, str, str, dict[str, str]]] = {
    "openai": (openai.FakeOpenAI, "OPENAI", "gpt-5-mini", {"OPENAI_API_KEY": "k"}),
    "claude": (anthropic.FakeAnthropic, "CLAUDE", "claude-haiku-4-5", {"ANTHROPIC_API_KEY": "k"}),
    "gemini": (gemini.FakeGemini, "GEMINI", "gemini-3-flash", {"GEMINI_API_KEY": "k"}),
}
BASE_URL_ENV = {
    "openai": "OPENAI_BASE_URL",
    "claude": "ANTHROPIC_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
}


def _responder(provider: str) -> Any:
    """Calls ``lookup`` when tools are offered and no result is in yet; else a schema-valid
    answer (the provider's own answer shape)."""

    def respond(request: Recorded) -> Step:
        schema, offered, answered = _schema_and_state(provider, request.body)
        if offered and not answered:
            call = ("lookup", {"city": "Oslo"})
            if provider == "openai":
                return openai.tool_calls(call)
            return (
                anthropic.tool_uses(call) if provider == "claude" else gemini.function_calls(call)
            )
        value = generate_value(random.Random(1), schema)
        if provider == "claude":
            return anthropic.tool_use(value)
        return (
            openai.text(json.dumps(value))
            if provider == "openai"
            else gemini.text(json.dumps(value))
        )

    return respond


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_a_step_runs_its_tool_over_the_providers_own_protocol(
    runtime, db, tool_log, monkeypatch, provider
):
    fake_type, api_type, model, env = FAKES[provider]
    with fake_type() as fake:
        fake.responder = _responder(provider)
        monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "")
        for name, value in {
            **env,
            BASE_URL_ENV[provider]: fake.base_url if provider != "gemini" else fake.url,
        }.items():
            monkeypatch.setenv(name, value)
        with_tools(db, "lookup")
        settings = {"modelSettings": {"apiType": api_type, "modelName": model}}
        for doc in (
            f"workflows/{WF}",
            *(f"workflows/{WF}/agents/{a}" for a in ("extractor", "answerer")),
        ):
            db.document(doc).update(settings)
        start(db, "p1", QUERY, WF)
        settle(runtime, finished(db, "p1"), rounds=5)
        sent = [r.body for r in fake.requests]
    conv = conversation(db, "p1")
    assert conv.status == Status.DONE, conv.error
    assert runs(tool_log) == ["lookup Oslo"]
    [call] = tool_calls(db, "p1", ANSWERER_STEP)
    assert call["status"] == "done" and call["result"] == "sunny in Oslo"
    assert len(sent) == 3  # the extractor's answer, the answerer's call, its answer
    assert "sunny in Oslo" in json.dumps(sent[2]) and "sunny in Oslo" not in json.dumps(sent[1])


def test_under_chaos_each_tool_call_runs_once(runtime, db, tool_log):
    """Duplicate deliveries and injected faults (a step's invocation failing, retried): each
    conversation's answerer runs its tool once, however often its step is delivered."""
    with_tools(db, "lookup")
    ids = [f"x{i}" for i in range(4)]
    settings = ChaosSettings(duplicate_rate=0.6, fault_rate=0.15, seed=5)
    with runtime.chaos(settings) as run:
        for cid in ids:
            start(db, cid, QUERY, WF)
        settle(runtime, finished(db, *ids), rounds=30)
    print(run.describe())
    results = []
    for cid in ids:
        conv = conversation(db, cid)
        assert conv.status == Status.DONE, (cid, conv.error)
        [call] = tool_calls(db, cid, ANSWERER_STEP)
        assert call["status"] == "done", (cid, call)
        results.append(call["result"].removeprefix("sunny in "))
    assert sorted(runs(tool_log)) == sorted(f"lookup {city}" for city in results)
    counts = run.counts()
    assert counts["duplicated"] > 0, counts
