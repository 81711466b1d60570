"""The conductor's pure decisions: what a step comes to (the answer of a result, a failure),
the cap on dispatches, routing rules, a turn's next step, the user's ``is_valid`` message, the
names and places of user code."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from functions.conductor import (
    asking,
    commit,
    completion,
    conducting,
    decide,
    heuristic,
    history,
    parallel_steps,
    runner,
    tool_calls,
    turns,
    workflow,
)
from functions.conductor.wire import ConductorBranch, ConductorStep
from shared.conductor.documents import (
    CONDUCTOR,
    FINISH,
    AgentDoc,
    ConductorConfig,
    Conversation,
    Problem,
    RoutingRule,
    Semantics,
    Status,
    Step,
    StepKind,
    WorkflowDoc,
    WorkflowFormat,
)
from shared.conductor.prompt_args import PromptValidationError
from shared.errors import UserCodeError
from shared.llm.tools import MAX_RESULT_CHARS
from shared.models import DocumentError


def _ctx(
    *,
    step: Step | None = None,
    dispatches: int = 0,
    diskurs: bool = False,
    memory: dict[str, Any] | None = None,
    **conductor: Any,
) -> turns.Context:
    conv = Conversation.model_validate(
        {
            "query": "q",
            "workflowId": "wf",
            "dispatches": dispatches,
            "memory": {
                k: {"value": v, "agent": "a", "turn": 1, "step": 1}
                for k, v in (memory or {}).items()
            },
        }
    )
    wf = WorkflowDoc(
        agents=["extractor", "answerer"],
        format=WorkflowFormat.DISKURS if diskurs else WorkflowFormat.DLAB,
        conductor=ConductorConfig(**conductor),
    )
    step = step or Step(index=4, kind=StepKind.CONDUCTOR, agent=CONDUCTOR, turn=2)
    return turns.Context("c1", conv, step, wf, Semantics(), None, ())


# --- completion, history ------------------------------------------------------------------


def test_paths() -> None:
    assert completion.conversation_path("c1") == "conversations/c1"
    assert completion.step_path("c1", 7) == "conversations/c1/steps/0007"
    assert history.steps_collection("c1") == "conversations/c1/steps"


@pytest.mark.parametrize(
    ("result", "answer"),
    [
        ({"answer": "42"}, "42"),  # its only value, a text
        ({"count": 3}, '{"count": 3}'),  # the only value is no text: the whole result
        ({"a": "x", "b": "y"}, '{"a": "x", "b": "y"}'),
        ({"name": "Zoë", "n": 1}, '{"name": "Zoë", "n": 1}'),  # not escaped
        (None, ""),
    ],
)
def test_ended_done_with_the_answer_of_its_result(
    result: dict[str, Any] | None, answer: str
) -> None:
    done = completion.ended("finalize", result, note="n")
    assert (done.status, done.outcome, done.result, done.note) == (
        Status.DONE,
        "finalize",
        result,
        "n",
    )
    assert done.answer == answer


def test_failed_carries_its_problem() -> None:
    problem = Problem(document="conversations/c1", field="f", reason="r")
    done = completion.failed(problem)
    assert done.status == Status.FAILED and done.problem == problem and done.next_step is None


# --- conducting ---------------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    ok: bool
    items: list[str]


@pytest.mark.parametrize(
    ("value", "result"),
    [
        ({"answer": "yes"}, {"answer": "yes"}),
        (Verdict(True, ["a"]), {"ok": True, "items": ["a"]}),
        ("plain", {"result": "plain"}),
        (None, {"result": None}),
        ({"path": Path("/x")}, {"path": "/x"}),  # what JSON cannot hold, as its text
    ],
)
def test_as_result(value: Any, result: dict[str, Any]) -> None:
    assert conducting._as_result(value) == result


@pytest.mark.parametrize(
    ("rule", "described"),
    [
        (RoutingRule(then="x"), "always"),
        (RoutingRule(when_missing=["topic"], then="x"), "missing ['topic']"),
        (RoutingRule(when_present=["answer"], then="x"), "present ['answer']"),
        (
            RoutingRule(when_missing=["a"], when_present=["b"], then="x"),
            "missing ['a'] and present ['b']",
        ),
    ],
)
def test_describe_rule(rule: RoutingRule, described: str) -> None:
    assert conducting._describe(rule) == described


def test_the_first_matching_rule_routes() -> None:
    rules = [
        RoutingRule(when_present=["answer"], then=FINISH),
        RoutingRule(when_missing=["topic"], then="extractor"),
    ]
    routed = conducting._rule(_ctx(rules=rules, memory={"topic": ""}))
    assert routed is not None
    assert (routed.next_agent, routed.by, routed.reason) == (
        "extractor",
        "rule",
        "missing ['topic']",
    )
    both = conducting._rule(_ctx(rules=rules, memory={"answer": "a"}))
    assert both is not None and both.next_agent == FINISH
    assert conducting._rule(_ctx(rules=rules, memory={"topic": "t"})) is None


@pytest.mark.parametrize(
    ("dispatches", "diskurs", "capped"),
    [
        (7, False, False),
        (8, False, True),
        (6, True, False),
        (7, True, True),  # Diskurs counts this visit of the conductor too
    ],
)
def test_capped_at_max_dispatches(dispatches: int, diskurs: bool, capped: bool) -> None:
    ctx = _ctx(dispatches=dispatches, diskurs=diskurs, max_dispatches=8)
    assert conducting._capped(ctx) is capped


def test_cap_fails_a_dlab_conversation_naming_the_setting() -> None:
    done = conducting._cap(_ctx(dispatches=8, max_dispatches=8))
    assert done.status == Status.FAILED
    assert done.decision is not None and (done.decision.next_agent, done.decision.by) == (
        FINISH,
        "cap",
    )
    assert done.problem is not None
    assert (done.problem.document, done.problem.field) == ("conversations/c1", "dispatches")
    assert "conductor.maxDispatches = 8" in done.problem.reason


def test_finalize_to_a_supervisor_that_is_no_agent_ends_without_result() -> None:
    done = conducting._finalize(_ctx(supervisor="boss"))
    assert done.status == Status.DONE and done.result is None and done.answer == ""
    assert done.outcome == "boss missing"
    assert done.decision is not None and done.decision.by == "finalize"
    assert len(done.warnings) == 1 and "'boss' is not an agent" in done.warnings[0]


# --- turns, decide, parallel_steps --------------------------------------------------------


def test_context_memory_and_place() -> None:
    ctx = _ctx(memory={"topic": "proxy"})
    assert ctx.memory() == {"topic": "proxy"}
    assert ctx.memory({"topic": "firewall", "name": "D"}) == {"topic": "firewall", "name": "D"}
    assert ctx.longterm_memory() is None  # no memory class
    assert ctx.step_doc == "conversations/c1/steps/0004"
    assert not ctx.diskurs and _ctx(diskurs=True).diskurs


def test_conductor_step_is_named_by_the_format() -> None:
    dlab = turns.conductor_step(_ctx(name="boss"), 5, predicate=True)
    assert (dlab.index, dlab.kind, dlab.agent, dlab.turn, dlab.predicate) == (
        5,
        StepKind.CONDUCTOR,
        CONDUCTOR,
        2,
        True,
    )
    assert turns.conductor_step(_ctx(diskurs=True, name="boss"), 5).agent == "boss"


def _agent_step(**more: Any) -> Step:
    fields: dict[str, Any] = {"index": 3, "agent": "extractor", "turn": 2, "agent_step": 1}
    return Step(kind=StepKind.AGENT, **(fields | more))


@pytest.mark.parametrize(
    ("following", "continues"),
    [
        (_agent_step(agent_step=2, index=4), True),
        (_agent_step(agent_step=3, index=4), False),
        (_agent_step(agent_step=2, index=4, turn=3), False),
        (_agent_step(agent_step=2, index=4, agent="answerer"), False),
        (Step(index=4, kind=StepKind.CONDUCTOR, agent=CONDUCTOR, turn=2), False),
        (None, False),
    ],
)
def test_continues_only_the_same_turns_next_step(following: Step | None, continues: bool) -> None:
    ctx = _ctx(step=_agent_step())
    done = completion.Completion(next_step=following)
    assert parallel_steps._continues(ctx, done) is continues


def test_fresh_arguments_of_a_turn() -> None:
    first = _agent_step(input={"topic": "x"}, agent_type="multistep")
    assert decide._fresh(first) == {"input": {"topic": "x"}, "agent_type": "multistep", "turn": 2}


# --- asking, tool_calls, workflow ---------------------------------------------------------


def test_invalid_message_is_the_validation_errors() -> None:
    def is_valid(arg: Any) -> bool:
        if not arg.get("topic"):
            raise PromptValidationError("say the topic")
        return True

    assert asking.invalid_message(is_valid, {"topic": "x"}, "p.is_valid") is None
    assert asking.invalid_message(is_valid, {}, "p.is_valid") == "say the topic"


def test_invalid_message_other_errors_end_the_step() -> None:
    def is_valid(arg: Any) -> bool:
        raise KeyError("bug")

    with pytest.raises(UserCodeError) as raised:
        asking.invalid_message(is_valid, {}, "p.is_valid")
    assert raised.value.function == "p.is_valid"


def test_stored_value_json_unless_too_large() -> None:
    assert tool_calls.stored_value({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    assert tool_calls.stored_value(Path("/x")) == '"/x"'
    assert tool_calls.stored_value("x" * MAX_RESULT_CHARS) == ""  # quoted: two more
    assert tool_calls.stored_value("x" * (MAX_RESULT_CHARS - 2)) != ""


def test_code_name() -> None:
    assert (
        workflow.code_name(AgentDoc(name="a", module="workflows.x.prompt"), "is_valid")
        == "workflows.x.prompt.is_valid"
    )
    located = AgentDoc(name="a", prompt_location="agents/first")
    assert workflow.code_name(located, "is_final") == "agents/first/prompt.py:is_final"


def test_code_file_outside_the_allowed_roots_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DLAB_WORKFLOW_DIRS", raising=False)
    with pytest.raises(DocumentError) as raised:
        workflow.code_file(str(tmp_path), "prompt.py", "workflows/w/agents/a", "promptLocation")
    assert (raised.value.document, raised.value.field) == ("workflows/w/agents/a", "promptLocation")
    assert "DLAB_WORKFLOW_DIRS" in str(raised.value)
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", str(tmp_path))
    found = workflow.code_file(str(tmp_path), "prompt.py", "workflows/w/agents/a", "x")
    assert found == (tmp_path / "prompt.py").resolve()
    with pytest.raises(DocumentError, match="is not under"):  # a way out of it is refused too
        workflow.code_file(str(tmp_path), "../outside.py", "workflows/w/agents/a", "x")


# --- commit, runner, heuristic, wire ------------------------------------------------------


def test_merged_memory_only_when_the_step_hands_back() -> None:
    ctx = _ctx(memory={"topic": "proxy"})
    step = _agent_step()
    assert commit._merged(ctx.conv, step, completion.Completion()) is None
    done = completion.Completion(hand_back={"topic": "firewall", "x": 1}, memory_fields=("topic",))
    merged = commit._merged(ctx.conv, step, done)
    assert merged is not None and set(merged) == {"topic"}
    assert (merged["topic"].value, merged["topic"].agent) == ("firewall", "extractor")
    assert (merged["topic"].turn, merged["topic"].step) == (2, 3)


def test_conversation_update_of_a_turns_first_step() -> None:
    nxt = _agent_step(index=5)
    done = completion.Completion(next_step=nxt, warnings=("w",))
    update = commit._conversation_update(_ctx().conv, done, None)
    assert update["status"] == "RUNNING"
    assert (update["currentStep"], update["activeAgent"]) == (5, "extractor")
    assert update["dispatches"] == firestore.Increment(1)  # a new turn is a dispatch
    assert update["warnings"] == firestore.ArrayUnion(["w"])
    assert not {"memory", "answer", "error", "outcome", "result"} & set(update)
    later = commit._conversation_update(
        _ctx().conv, completion.Completion(next_step=_agent_step(agent_step=2)), None
    )
    assert "dispatches" not in later  # the same turn goes on


def test_conversation_update_of_an_end() -> None:
    done = completion.ended("answer", {"answer": "42"})
    update = commit._conversation_update(_ctx().conv, done, None)
    assert update["status"] == "DONE"
    assert (update["answer"], update["outcome"], update["result"]) == (
        "42",
        "answer",
        {"answer": "42"},
    )
    problem = Problem(document="conversations/c1", field="f", reason="r")
    failed = commit._conversation_update(_ctx().conv, completion.failed(problem), None)
    assert failed["status"] == "FAILED" and failed["error"] == problem.to_firestore()


def test_lease_path_of_a_unit() -> None:
    assert runner.lease_path("c1", runner.START) == f"conversations/c1/leases/{runner.START}"
    assert runner.lease_path("c1", "0003") == "conversations/c1/leases/0003"


def test_heuristic_model_reply_is_its_text() -> None:
    assert heuristic._text({"text": "hi"}) == "hi"
    for bad in ({"text": 3}, {}, "hi", None):
        with pytest.raises(PromptValidationError):
            heuristic._text(bad)
    assert heuristic.StepModel(None).count_tokens("a b  c\nd") == 4


def test_heuristic_sequences_plain_or_async() -> None:
    def plain(conversation: Any, call_tool: Any, llm_client: Any) -> Any:
        return (conversation, call_tool, llm_client)

    async def awaited(conversation: Any, call_tool: Any, llm_client: Any) -> Any:
        return conversation + 1

    assert heuristic._run(plain, "c", "t", "m") == ("c", "t", "m")
    assert heuristic._run(awaited, 1, None, None) == 2


def test_conductor_messages_travel_in_camel_case() -> None:
    step = ConductorStep(conversation_id="c1", index=3, reason="start")
    assert step.to_json() == {"conversationId": "c1", "index": 3, "reason": "start"}
    branch = ConductorBranch(conversation_id="c1", index=3, branch=2)
    assert branch.to_json()["agentStep"] == 1
    assert ConductorBranch.model_validate(branch.to_json()) == branch
