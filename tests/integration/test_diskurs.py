"""Diskurs projects on the real emulators and the scripted model: Diskurs' own forum_setup
example end to end (only its llms: changed), and small projects written as a Diskurs user writes
them (dataclass prompt arguments, Input/Output fields, a LongtermMemory, routing functions,
can_finalize / finalize / fail, heuristic agents, finalizers, first_contact, topics), with
Diskurs' semantics: the validation message verbatim, and carrying on when trials run out."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conductor_state import Scripted, attempts, conversation, finished, start, steps
from experiment_state import settle
from tool_state import tool_calls

from shared.conductor.documents import Status, StepKind
from tools.load_workflow import WorkflowError, load

pytestmark = pytest.mark.usefixtures("clean")

ROOT = Path(__file__).resolve().parents[2]
FORUM = ROOT / "examples" / "diskurs" / "forum_setup"
QUERY = "What is the meaning of life?"


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The projects' folders may be imported by the functions (``DLAB_WORKFLOW_DIRS``)."""
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", f"{FORUM.parent}:{tmp_path}")
    return tmp_path


def test_diskurs_forum_setup_runs_unchanged_to_its_own_fail(runtime, db, allowed):
    """The example's conductor can never finalize (its memory's test_flag stays 0), so Diskurs
    routes until maxDispatches (50) and ends with the project's own fail(memory); its
    finalizer_agent is never defined (a load warning). So it does here, step by step."""
    load(db, FORUM, "forum")
    start(db, "f1", QUERY, "forum")
    settle(runtime, finished(db, "f1"), rounds=60, timeout=300)
    conv = conversation(db, "f1")
    assert conv.status == Status.DONE, conv.error
    assert conv.outcome == "fail"
    assert conv.result == {"error": "Failed to finalize", "user_query": QUERY, "test_flag": 0}
    found = steps(db, "f1")
    conducting = [s for s in found if s.kind == StepKind.CONDUCTOR]
    turns = [s for s in found if s.kind == StepKind.AGENT]
    assert len(conducting) == 50 and len(turns) == 49  # Diskurs counts the conductor's visits
    assert {s.agent for s in turns} <= {"first_agent", "second_agent"}
    assert all(s.decision.next_agent == t.agent for s, t in zip(conducting, turns, strict=False))
    assert all(s.is_final and len(s.output["answer"]) > 10 for s in turns)  # is_final, 1 step
    workflow = db.document("workflows/forum").get().to_dict()
    assert any("'finalizer_agent' is not an agent" in w for w in workflow["warnings"])


MEMORY = """\
from dataclasses import dataclass
from diskurs import LongtermMemory


@dataclass
class DeskMemory(LongtermMemory):
    urgency: int = 0
    answer: str = ""
    closing: str = ""
"""

BOSS = """\
def ready(memory):
    return bool(memory.answer)


def wrap_up(memory):
    return {"answer": memory.answer, "urgency": memory.urgency}
"""

RULES = """\
def unclassified(conversation):
    return conversation.longterm_memory.urgency == 0


def classified(conversation):
    return conversation.longterm_memory.urgency > 0 and not conversation.longterm_memory.answer
"""

CLASSIFIER = """\
from dataclasses import dataclass
from diskurs import InputField, OutputField, PromptArgument, PromptValidationError


@dataclass
class ClassifierPrompt(PromptArgument):
    user_query: InputField[str] = ""
    urgency: OutputField[int] = 0
    summary: OutputField[str] = ""


def is_valid(arg):
    if arg.urgency and not 1 <= arg.urgency <= 10:  # 0: not rated yet (the first prompt's)
        raise PromptValidationError("Urgency must be between 1 and 10")
    return True
"""

ANSWERER = """\
from dataclasses import dataclass
from diskurs import InputField, OutputField, PromptArgument


@dataclass
class AnswererPrompt(PromptArgument):
    urgency: InputField[int] = 0
    answer: OutputField[str] = ""


async def answer(conversation, call_tool, llm_client):
    arg = conversation.prompt_argument
    arg.answer = f"urgency {arg.urgency}: {conversation.longterm_memory.user_query}"
    return conversation.update(prompt_argument=arg)
"""

CLOSER = """\
from dataclasses import dataclass
from diskurs import InputField, OutputField, PromptArgument


@dataclass
class CloserPrompt(PromptArgument):
    answer: InputField[str] = ""
    closing: OutputField[str] = ""
"""


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return folder


JUDGE = """\
from dataclasses import dataclass
from diskurs import OutputField, PromptArgument


@dataclass
class JudgePrompt(PromptArgument):
    can_finalize: OutputField[bool] = False
"""

REVIEWER = """\
from dataclasses import dataclass
from diskurs import InputField, OutputField, PromptArgument


@dataclass
class ReviewerPrompt(PromptArgument):
    answer: InputField[str] = ""
    verdict: OutputField[str] = ""
"""

SUPERVISED = """
  - name: judge
    type: multistep_predicate
    llm: fake
    prompt: {type: multistep_prompt, location: judge, promptArgumentClass: JudgePrompt}
  - name: reviewer
    type: multistep_finalizer
    llm: fake
    prompt: {type: multistep_prompt, location: reviewer, promptArgumentClass: ReviewerPrompt}
    finalProperties: [verdict]
"""


def _supervised(folder: Path) -> Path:
    """The desk whose conductor asks a predicate agent (judge) whether it can finalize, and
    then hands the conversation to its supervisor (a finalizer here)."""
    desk = _desk(folder, finalizer=False)
    config = (desk / "config.yml").read_text()
    config = config.replace("maxDispatches: 6", "maxDispatches: 10\n    canFinalizeName: judge")
    config = config.replace("maxDispatches: 10", "maxDispatches: 10\n    supervisor: reviewer")
    files = {
        "config.yml": config + textwrap.indent(textwrap.dedent(SUPERVISED), "  "),
        "judge/prompt.py": JUDGE,
        "judge/system_template.jinja2": "You judge.",
        "judge/user_template.jinja2": "Can we finish? {{ can_finalize }}",
        "judge/agent_description.txt": "judges",
        "reviewer/prompt.py": REVIEWER,
        "reviewer/system_template.jinja2": "You review.",
        "reviewer/user_template.jinja2": "Review: {{ answer }}",
        "reviewer/agent_description.txt": "reviews",
    }
    return _write(desk, files)


def _desk(folder: Path, finalizer: bool) -> Path:
    """A support desk: the boss (conductor) routes by rules.py to the classifier (a model
    agent) and the answerer (a heuristic agent), then finalizes by wrap_up or the closer."""
    closer = """
      - name: closer
        type: multistep_finalizer
        llm: fake
        prompt: {type: multistep_prompt, location: closer, promptArgumentClass: CloserPrompt}
        finalProperties: [closing]
    """
    config = f"""
    first_contact: boss
    longtermMemory: {{type: DeskMemory, location: memory.py}}
    llms: [{{name: fake, type: scripted}}]
    agents:
      - name: boss
        type: conductor
        llm: fake
        prompt: {{type: conductor_prompt, location: boss, canFinalizeName: ready,
                  finalizeName: wrap_up}}
        topics: [classifier, answerer]
        {"finalizerName: closer" if finalizer else ""}
        maxDispatches: 6
        rules:
          - {{name: first, description: x, location: boss, conditionName: unclassified,
             targetAgent: classifier}}
          - {{name: then, description: x, location: boss, conditionName: classified,
             targetAgent: answerer}}
      - name: classifier
        type: multistep
        llm: fake
        prompt: {{type: multistep_prompt, location: classifier,
                  promptArgumentClass: ClassifierPrompt}}
        topics: [boss]
      - name: answerer
        type: heuristic
        prompt: {{type: heuristic_prompt, location: answerer,
                  promptArgumentClass: AnswererPrompt, heuristicSequenceName: answer}}
        topics: [boss]
    {closer if finalizer else ""}
    """
    template = "Classify: {{ user_query }} {{ not_a_field }}"
    files = {
        "config.yml": config,
        "memory.py": MEMORY,
        "boss/prompt.py": BOSS,
        "boss/rules.py": RULES,
        "boss/agent_description.txt": "routes",
        "classifier/prompt.py": CLASSIFIER,
        "classifier/system_template.jinja2": "You classify support requests.",
        "classifier/user_template.jinja2": template,
        "classifier/agent_description.txt": "rates urgency",
        "answerer/prompt.py": ANSWERER,
        "answerer/user_template.jinja2": "{{ answer }}",
        "answerer/agent_description.txt": "answers",
        "closer/prompt.py": CLOSER,
        "closer/system_template.jinja2": "Close politely.",
        "closer/user_template.jinja2": "The answer was {{ answer }}.",
        "closer/agent_description.txt": "closes",
    }
    return _write(folder / ("desk_closer" if finalizer else "desk"), files)


def test_a_diskurs_conductor_routes_by_functions_and_finalizes_with_its_memory(
    runtime, db, allowed
):
    """Route functions on Diskurs' Conversation; the classifier's int field with a default 0
    is filled (1..10) by the scripted model; a wrong first reply gets is_valid's message
    verbatim; the heuristic answerer takes its InputField from the memory; can_finalize then
    the project's finalize(memory) is the result."""
    load(db, _desk(allowed, finalizer=False), "desk")
    model = Scripted()
    model.reply("Classify:", {"urgency": 42, "summary": "too urgent"})
    with runtime.model_wrapper(model.wrap):
        start(db, "d1", QUERY, "desk")
        settle(runtime, finished(db, "d1"))
    conv = conversation(db, "d1")
    assert conv.status == Status.DONE, conv.error
    urgency = conv.memory["urgency"].value
    assert 1 <= urgency <= 10 and conv.memory["urgency"].agent == "classifier"
    assert conv.outcome == "finalize"
    assert conv.result == {"answer": f"urgency {urgency}: {QUERY}", "urgency": urgency}
    found = steps(db, "d1")
    assert [(s.kind, s.agent) for s in found] == [
        ("conductor", "boss"),
        ("agent", "classifier"),
        ("conductor", "boss"),
        ("agent", "answerer"),
        ("conductor", "boss"),
    ]
    assert [s.decision.by for s in found if s.decision][:2] == ["rule", "rule"]
    tries = attempts(db, "d1", "0001")
    assert [t["response"]["status"] for t in tries] == ["INVALID_RESPONSE", "OK"]
    corrective = next(r for r in model.prompts if r.history).history[-1].text
    assert corrective == "Urgency must be between 1 and 10"  # verbatim, as Diskurs sends it
    assert "Classify: " + QUERY in model.prompts[0].prompt  # InputField from the memory
    assert attempts(db, "d1", "0003") == []  # the heuristic agent: no model call


def test_a_diskurs_finalizer_agent_gives_the_result_its_final_properties(runtime, db, allowed):
    load(db, _desk(allowed, finalizer=True), "desk2")
    start(db, "d2", QUERY, "desk2")
    settle(runtime, finished(db, "d2"))
    conv = conversation(db, "d2")
    assert conv.status == Status.DONE, conv.error
    assert conv.outcome == "finalizer"
    found = steps(db, "d2")
    assert found[-1].agent == "closer" and found[-1].input["answer"].startswith("urgency ")
    assert conv.result == {"closing": found[-1].output["closing"]} and conv.result["closing"]


def test_trials_running_out_carry_on_with_no_valid_answer(runtime, db, allowed):
    """Diskurs' semantics: the classifier never gives a valid urgency; its step ends with
    'No valid answer found after 5 trials.' and its arguments unchanged, is_final (Diskurs'
    default: always) ends the turn, the rules send it again, and the conductor's cap ends the
    conversation with fail() (here Diskurs' default: the memory and an error)."""
    load(db, _desk(allowed, finalizer=False), "desk3")
    model = Scripted()
    model.reply("Classify:", {"urgency": 99}, times=-1)
    with runtime.model_wrapper(model.wrap):
        start(db, "d3", QUERY, "desk3")
        settle(runtime, finished(db, "d3"), rounds=60)
    conv = conversation(db, "d3")
    assert conv.status == Status.DONE and conv.outcome == "fail"
    assert conv.result["error"] == "Failed to finalize conversation"
    assert conv.result["urgency"] == 0 and conv.result["user_query"] == QUERY
    turns = [s for s in steps(db, "d3") if s.agent == "classifier"]
    assert [s.agent_step for s in turns] == [1] * 5  # maxDispatches - 1 turns of one step
    assert all(s.note.startswith("No valid answer found after 5 trials.") for s in turns)
    assert all(s.output["urgency"] == 0 for s in turns)
    assert len(attempts(db, "d3", "0001")) == 5


CHAIN = """
first_contact: reader
llms: [{name: fake, type: scripted}]
agents:
  - name: reader
    type: multistep
    llm: fake
    maxReasoningSteps: 2
    prompt: {type: multistep_prompt, location: reader, promptArgumentClass: ReaderPrompt}
    topics: [collector]
  - name: collector
    type: heuristic_finalizer
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: collector, promptArgumentClass: CollectorPrompt}
    finalProperties: [items]
"""

READER = """\
from dataclasses import dataclass, field
from diskurs import PromptArgument


@dataclass
class ReaderPrompt(PromptArgument):
    items: list[str] = field(default_factory=list)


def is_final(arg):
    return False  # every reasoning step, until maxReasoningSteps
"""

COLLECTOR = """\
from dataclasses import dataclass, field
from diskurs import PromptArgument


@dataclass
class CollectorPrompt(PromptArgument):
    items: list[str] = field(default_factory=list)


def heuristic_sequence(conversation, call_tool, llm_client):
    arg = conversation.prompt_argument
    arg.items = [conversation.chat[0].content.upper()]
    return conversation.update(prompt_argument=arg)
"""


def test_a_project_without_a_conductor_follows_its_topics_to_a_heuristic_finalizer(
    runtime, db, allowed
):
    folder = _write(
        allowed / "chain",
        {
            "config.yml": CHAIN,
            "reader/prompt.py": READER,
            "reader/system_template.jinja2": "Read.",
            "reader/user_template.jinja2": "Items so far: {{ items }}",
            "reader/agent_description.txt": "reads",
            "collector/prompt.py": COLLECTOR,
            "collector/agent_description.txt": "collects",
        },
    )
    load(db, folder, "chain")
    start(db, "c1", "list these", "chain")
    settle(runtime, finished(db, "c1"))
    conv = conversation(db, "c1")
    assert conv.status == Status.DONE, conv.error
    found = steps(db, "c1")
    assert [(s.agent, s.agent_step) for s in found] == [
        ("reader", 1),
        ("reader", 2),
        ("collector", 1),
    ]
    assert found[1].input == found[0].output  # the second reasoning step builds on the first
    assert conv.outcome == "finalizer" and conv.result == {"items": ["LIST THESE"]}


def test_a_predicate_agent_decides_can_finalize_and_the_supervisor_takes_over(runtime, db, allowed):
    """The conductor asks its multistep_predicate agent once per visit; its can_finalize (or
    the conductor's own can_finalize function) lets it finalize, to its supervisor."""
    load(db, _supervised(allowed), "desk4")
    model = Scripted()
    model.reply("Can we finish?", {"can_finalize": False})
    model.reply("Can we finish?", {"can_finalize": True}, times=-1)
    with runtime.model_wrapper(model.wrap):
        start(db, "d4", QUERY, "desk4")
        settle(runtime, finished(db, "d4"))
    conv = conversation(db, "d4")
    assert conv.status == Status.DONE, conv.error
    found = steps(db, "d4")
    assert [s.agent for s in found] == [
        "boss", "judge", "boss", "classifier", "boss", "judge", "boss", "reviewer",
    ]  # fmt: skip
    assert [s.predicate for s in found if s.agent == "boss"] == [None, False, None, True]
    assert [s.decision.by for s in found if s.agent == "boss"] == [
        "can_finalize", "rule", "can_finalize", "finalize",
    ]  # fmt: skip
    assert conv.outcome == "finalizer"
    assert conv.result == {"verdict": found[-1].output["verdict"]} and conv.result["verdict"]
    assert found[-1].input["answer"] == ""  # the answerer never ran: the judge said finish


def test_the_cap_counts_the_conductors_visits_not_its_predicates_turns(runtime, db, allowed):
    """Diskurs' conductor counts its visits (``n_dispatches``) against ``maxDispatches``;
    asking its multistep_predicate agent is part of a visit, not one: with a cap of 3 and a
    judge that never lets it finalize, the third visit fails, after both agents ran."""
    desk = _supervised(allowed)
    config = (desk / "config.yml").read_text().replace("maxDispatches: 10", "maxDispatches: 3")
    (desk / "config.yml").write_text(config)
    (desk / "boss" / "prompt.py").write_text(BOSS.replace("bool(memory.answer)", "False"))
    load(db, desk, "capped")
    model = Scripted()
    model.reply("Can we finish?", {"can_finalize": False}, times=-1)
    with runtime.model_wrapper(model.wrap):
        start(db, "v1", QUERY, "capped")
        settle(runtime, finished(db, "v1"))
    conv = conversation(db, "v1")
    assert conv.status == Status.DONE and conv.outcome == "fail", conv.error
    assert [s.agent for s in steps(db, "v1")] == [
        "boss", "judge", "boss", "classifier",
        "boss", "judge", "boss", "answerer",
        "boss", "judge", "boss",
    ]  # fmt: skip
    assert conv.visits == {"boss": 3}


DESK_TOOLS = '''\
from diskurs import tool


@tool
def lookup(city: str) -> str:
    """
    The weather in a city.

    :param city: The city's name.
    :return: The weather there.
    """
    return f"sunny in {city}"


def create_address(configs, directory):
    @tool
    def address(name: str) -> str:
        """
        Where a person lives.

        :param name: The person's name.
        """
        return f"{configs['prefix']} {directory.streets[name]}"

    return address
'''

PEOPLE = """\
class Directory:
    def __init__(self, name, streets):
        self.name = name
        self.streets = streets

    @classmethod
    def create(cls, name, **parameters):
        return cls(name, **parameters)
"""

TOOLED_ANSWERER = ANSWERER.replace(
    'arg.answer = f"urgency {arg.urgency}: {conversation.longterm_memory.user_query}"',
    'where = await call_tool("address", {"name": "ann"})\n'
    '    arg.answer = f"urgency {arg.urgency}: Ann lives {where}"',
)

TOOLS_CONFIG = """
customModules:
  - {name: desk_tools, location: tools/desk_tools.py}
  - {name: people, location: tools/people.py}
toolDependencies:
  - {name: directory, moduleName: people, className: Directory,
     parameters: {streets: {ann: Main St.}}}
tools:
  - {name: weather, functionName: lookup, moduleName: desk_tools}
  - {name: address, functionName: address, moduleName: desk_tools, configs: {prefix: at},
     dependencies: [directory]}
"""


def _tooled_desk(folder: Path, header: str = "") -> Path:
    """The desk written in Diskurs 0.0.79's form with tools: ``customModules``, tools by
    ``moduleName``, a list of ``toolDependencies`` (whose keys Diskurs snake-cases too, so the
    directory's name is `ann`); the classifier may call ``lookup``, the
    heuristic answerer calls ``address`` (made by its factory from configs and a dependency)."""
    desk = _desk(folder / "tooled", finalizer=True)
    config = (desk / "config.yml").read_text()
    for anchor, tools in (
        ("ClassifierPrompt}", "lookup"),
        ("heuristicSequenceName: answer}", "address"),
    ):
        assert anchor in config
        config = config.replace(anchor, f"{anchor}\n    tools: [{tools}]")
    files = {
        "config.yml": config + TOOLS_CONFIG,
        "tools/desk_tools.py": DESK_TOOLS,
        "tools/people.py": PEOPLE,
        "answerer/prompt.py": header + TOOLED_ANSWERER,
    }
    return _write(desk, files)


def test_a_diskurs_0_0_79_project_with_custom_module_tools_runs(runtime, db, allowed):
    """Tools declared as Diskurs 0.0.79 declares them run: the model agent's tool by its
    function's name, the heuristic agent's through call_tool, made by create_address with its
    configs and the Directory dependency made by Directory.create(name=..., **parameters)."""
    load(db, _tooled_desk(allowed), "tooled")
    workflow = db.document("workflows/tooled").get().to_dict()
    assert workflow["toolDependencies"]["directory"]["className"] == "Directory"
    start(db, "w1", QUERY, "tooled")
    settle(runtime, finished(db, "w1"))
    conv = conversation(db, "w1")
    assert conv.status == Status.DONE, conv.error
    assert conv.outcome == "finalizer"
    found = steps(db, "w1")
    assert [s.agent for s in found] == ["boss", "classifier", "boss", "answerer", "boss", "closer"]
    classifier_calls = tool_calls(db, "w1", "0001")
    assert [c["name"] for c in classifier_calls] == ["lookup"]
    assert classifier_calls[0]["result"].startswith("sunny in ")
    [address] = tool_calls(db, "w1", "0003")
    assert (address["name"], address["status"]) == ("address", "done")
    assert found[3].output["answer"].endswith(": Ann lives at Main St.")


def _rated(runtime, db, desk: Path, marker: str, urgency: int) -> tuple[Any, Scripted]:
    """The desk run with the classifier's prompt (found by ``marker``) answered ``urgency``:
    the conversation (DONE, the urgency in its memory, the classifier's one reply valid) and
    the model."""
    load(db, desk, desk.name)
    model = Scripted()
    model.reply(marker, {"urgency": urgency, "summary": "rated"})
    with runtime.model_wrapper(model.wrap):
        start(db, "r1", QUERY, desk.name)
        settle(runtime, finished(db, "r1"))
    conv = conversation(db, "r1")
    assert conv.status == Status.DONE, conv.error
    assert conv.memory["urgency"].value == urgency
    assert [t["response"]["status"] for t in attempts(db, "r1", "0001")] == ["OK"]
    return conv, model


def test_prompt_modules_with_postponed_annotations_run_as_without(runtime, db, allowed):
    """Every prompt.py and the memory's file with ``from __future__ import annotations``: the
    field types are resolved as Diskurs' dataclass methods resolve them, so the classifier's
    first valid reply is taken (before: its int never validated). (Not the tools' file: Diskurs'
    own ``@tool`` reads ``annotation.__name__`` and fails on a string, in Diskurs too.)"""
    desk = _tooled_desk(allowed)
    for path in [desk / "memory.py", *desk.glob("*/prompt.py")]:
        path.write_text("from __future__ import annotations\n\n" + path.read_text())
    conv, _ = _rated(runtime, db, desk, "Classify:", 3)
    assert conv.outcome == "finalizer"


MISTAKES = [  # (config text, its replacement or None: a file removed, the message's key, reason)
    (
        "promptArgumentClass: ClassifierPrompt}",
        "promptArgumentClass: ClassifierPrompt, isValidName: is_vaild}",
        r"agents\[1\] \(classifier\)\.prompt\.isValidName",
        "no function 'is_vaild' in classifier/prompt.py (did you mean 'is_valid'?)",
    ),
    (
        "promptArgumentClass: ClassifierPrompt}",
        "promptArgumentClass: ClassifierPrompt, isValidNmae: is_valid}",
        r"\(classifier\)\.prompt\.isValidNmae",
        "unknown key (Diskurs would ignore it) (did you mean 'isValidName'?)",
    ),
    ("classifier/agent_description.txt", None, r"\(classifier\)\.prompt\.location",
     "no agent_description.txt in classifier (Diskurs opens it, and raises)"),
    (
        "functionName: lookup,",
        "functionName: lookpu,",
        r"tools\[0\]\.functionName",
        "no function 'lookpu' in tools/desk_tools.py (did you mean 'lookup'?)",
    ),
    (
        "moduleName: desk_tools}",
        "moduleName: desk_tool}",
        r"tools\[0\]\.moduleName",
        "'desk_tool' is not the name of one of customModules ['desk_tools', 'people'] "
        "(did you mean 'desk_tools'?)",
    ),
    ("tools: [lookup]", "tools: [lookpu]", r"agents\[1\] \(classifier\)\.tools",
     "'lookpu' is no tool of this project"),
    ("topics: [classifier, answerer]", "topcs: [classifier, answerer]", r"\(boss\)\.topcs",
     "unknown key (Diskurs would ignore it) (did you mean 'topics'?)"),
    ("maxDispatches: 6", "maxDispatches: 6\n    maxTrails: 3", r"\(boss\)\.maxTrails",
     "(did you mean 'maxTrials'?)"),
    ("finalProperties: [closing]", "finalPropertes: [closing]", r"\(closer\)\.finalPropertes",
     "(did you mean 'finalProperties'?)"),
    ("conditionName: unclassified", "condtionName: unclassified", r"rules\[0\]\.condtionName",
     "(did you mean 'conditionName'?)"),
    ("targetAgent: classifier", "targetAgent: clasifier", r"rules\[0\]\.targetAgent",
     "'clasifier' is not an agent ['classifier', 'answerer', 'closer'] (did you mean "
     "'classifier'?)"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "key", "reason"), MISTAKES)
def test_a_mistake_is_refused_at_load_naming_file_line_and_key(db, allowed, old, new, key, reason):
    """Each mistake that once passed the loader (and failed after model calls, or never) is
    refused by the load: nothing is written, so no conversation and no model call can start.
    The message names the config file, the line of the key and the key."""
    desk = _tooled_desk(allowed)
    config = desk / "config.yml"
    if new is None:
        (desk / old).unlink()
        marker = f"location: {old.split('/')[0]}"
    else:
        assert old in config.read_text()
        config.write_text(config.read_text().replace(old, new, 1))
        marker = new.splitlines()[-1].strip().rstrip(",}").split(", ")[-1]
    line = next(i for i, t in enumerate(config.read_text().splitlines(), 1) if marker in t)
    with pytest.raises(WorkflowError) as refused:
        load(db, desk, "mistaken")
    message = str(refused.value)
    assert re.match(rf"{re.escape(str(config))}:{line}: .*{key}: ", message), message
    assert reason in message
    assert not db.document("workflows/mistaken").get().exists


def test_is_valid_refusing_the_arguments_sends_its_message_instead_of_the_template(
    runtime, db, allowed
):
    """Diskurs' render_user_template: is_valid runs on the arguments before the user template
    is rendered; when it raises, its message is the user prompt. The classifier's is_valid
    refuses its initial urgency 0, so its first prompt is that message, not 'Classify: ...'."""
    desk = _desk(allowed, finalizer=False)
    strict = CLASSIFIER.replace("if arg.urgency and not 1", "if not 1")
    (desk / "classifier" / "prompt.py").write_text(strict)
    _, model = _rated(runtime, db, desk, "Urgency must be between 1 and 10", 4)
    first = model.prompts[0].prompt
    assert "Urgency must be between 1 and 10" in first and "Classify:" not in first
    assert "You classify support requests." in first  # the system template is rendered


def test_diskurs_python_entry_runs_a_project_on_the_backend(runtime, db, allowed):
    """A project's main.py with one import changed: create_forum_from_config, then
    ``await forum.ama(DiskursInput(...))`` runs the conversation on the backend (here the
    test's emulators) and returns Diskurs' final_result; the metadata reach the conversation."""
    from tools.diskurs_forum import DiskursInput, create_forum_from_config

    desk = _tooled_desk(allowed)
    forum = create_forum_from_config(config_path=Path("config.yml"), base_path=desk, client=db)
    given = DiskursInput(user_query=QUERY, metadata={"user_id": "1234"}, conversation_id="m1")
    result = asyncio.run(forum.ama(given))
    conv = conversation(db, "m1")
    assert conv.status == Status.DONE, conv.error
    assert result == conv.result and result["closing"]
    assert conv.metadata == {"user_id": "1234"}
    assert "#1 classifier" in forum.log.getvalue()  # the steps as they completed


SUMMARISER = """\
from dataclasses import dataclass
from diskurs import PromptArgument


@dataclass
class SummaryPrompt(PromptArgument):
    summary: str = ""


async def heuristic_sequence(conversation, call_tool, llm_client):
    arg = conversation.prompt_argument
    query = conversation.chat[0].content
    arg.summary = await llm_client.use_as_tool("Summarise in one word:", query)
    return conversation.update(prompt_argument=arg)
"""


def test_a_heuristic_sequence_asks_the_model_through_its_llm_client(runtime, db, allowed):
    """``llm_client.use_as_tool(prompt, content)`` asks the agent's model; the call is
    recorded among the step's tool calls (a redelivery gets the reply back), its attempt
    logged under the step."""
    config = """
    first_contact: summariser
    llms: [{name: fake, type: scripted}]
    agents:
      - name: summariser
        type: heuristic_finalizer
        llm: fake
        renderPrompt: false
        prompt: {type: heuristic_prompt, location: summariser, promptArgumentClass: SummaryPrompt}
        finalProperties: [summary]
    """
    files = {
        "config.yml": config,
        "summariser/prompt.py": SUMMARISER,
        "summariser/agent_description.txt": "summarises",
    }
    load(db, _write(allowed / "summary", files), "summary")
    model = Scripted()
    model.reply("Summarise in one word:", {"text": "Meaning"})
    with runtime.model_wrapper(model.wrap):
        start(db, "h1", QUERY, "summary")
        settle(runtime, finished(db, "h1"))
    conv = conversation(db, "h1")
    assert conv.status == Status.DONE, conv.error
    assert conv.result == {"summary": "Meaning"}
    assert QUERY in model.prompts[0].prompt
    [call] = tool_calls(db, "h1", "0000")
    assert (call["name"], call["status"]) == ("llm_client_use_as_tool", "done")
    assert [a["response"]["status"] for a in attempts(db, "h1", "0000")] == ["OK"]


def test_a_conductors_is_valid_refusing_its_arguments_is_sent_instead_of_its_template(
    runtime, db, allowed
):
    """The same for a conductor asking its model (no rule matches): its is_valid refuses its
    fresh arguments (no next agent yet), so its first prompt carries that message."""
    desk = _desk(allowed, finalizer=False)
    (desk / "boss" / "rules.py").write_text(
        RULES.replace("return conversation", "return False and conversation")
    )
    (desk / "boss" / "prompt.py").write_text(
        BOSS + "\n\nfrom diskurs import PromptValidationError\n\n\n"
        "def is_valid(arg):\n"
        "    if not arg.next_agent:\n"
        "        raise PromptValidationError('Name the agent to ask next')\n"
        "    return True\n"
    )
    load(db, desk, "routed")
    model = Scripted()
    with runtime.model_wrapper(model.wrap):
        start(db, "c2", QUERY, "routed")
        settle(runtime, finished(db, "c2"), rounds=60)
    assert conversation(db, "c2").status == Status.DONE
    first = model.prompts[0].prompt
    assert "Name the agent to ask next" in first
    assert next(s.decision.by for s in steps(db, "c2") if s.decision) == "model"


TOPICS = """
first_contact: reader
longtermMemory: {type: TopicMemory, location: memory.py}
llms: [{name: fake, type: scripted}]
agents:
  - name: reader
    type: multistep
    llm: fake
    prompt: {type: multistep_prompt, location: reader, promptArgumentClass: ReaderPrompt}
    topics: [%s]
  - name: tagger
    type: heuristic
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: tagger, promptArgumentClass: TagPrompt}
    topics: []
  - name: collector
    type: heuristic_finalizer
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: collector, promptArgumentClass: CollectPrompt}
    finalProperties: [items, tag]
"""

TOPIC_FILES = {
    "memory.py": """\
        from dataclasses import dataclass, field
        from diskurs import LongtermMemory


        @dataclass
        class TopicMemory(LongtermMemory):
            items: list[str] = field(default_factory=list)
            tag: str = ""
        """,
    "reader/prompt.py": """\
        from dataclasses import dataclass, field
        from diskurs import OutputField, PromptArgument


        @dataclass
        class ReaderPrompt(PromptArgument):
            items: OutputField[list[str]] = field(default_factory=list)
        """,
    "reader/system_template.jinja2": "Read.",
    "reader/user_template.jinja2": "Items to read: {{ items }}",
    "reader/agent_description.txt": "reads",
    "tagger/prompt.py": """\
        from dataclasses import dataclass, field
        from diskurs import InputField, OutputField, PromptArgument


        @dataclass
        class TagPrompt(PromptArgument):
            items: InputField[list[str]] = field(default_factory=list)
            tag: OutputField[str] = ""


        def heuristic_sequence(conversation, call_tool, llm_client):
            arg = conversation.prompt_argument
            arg.tag = "tagged " + ",".join(arg.items)
            return conversation.update(prompt_argument=arg)
        """,
    "tagger/agent_description.txt": "tags",
    "collector/prompt.py": """\
        from dataclasses import dataclass, field
        from diskurs import InputField, PromptArgument


        @dataclass
        class CollectPrompt(PromptArgument):
            items: InputField[list[str]] = field(default_factory=list)
            tag: InputField[str] = ""


        def heuristic_sequence(conversation, call_tool, llm_client):
            return conversation
        """,
    "collector/agent_description.txt": "collects",
}


def test_an_agent_publishes_its_turn_to_each_of_its_topics_in_turn(runtime, db, allowed):
    """Diskurs' agent publishes to each of its ``topics`` in turn, each topic's chain to its
    end before the next, each from the conversation as the agent left it: the tagger's chain
    (no topic: it ends) runs first and its memory change does not reach the collector; with the
    topics the other way round the collector's result stands after the tagger's chain ends."""
    for wid, topics in (("tag_first", "tagger, collector"), ("collect_first", "collector, tagger")):
        files = {**TOPIC_FILES, "config.yml": TOPICS % topics}
        load(db, _write(allowed / wid, files), wid)
    model = Scripted()
    model.reply("Items to read:", {"items": ["a", "b"]}, times=-1)
    with runtime.model_wrapper(model.wrap):
        start(db, "t1", QUERY, "tag_first")
        start(db, "t2", QUERY, "collect_first")
        settle(runtime, finished(db, "t1", "t2"))
    first, second = conversation(db, "t1"), conversation(db, "t2")
    assert first.status == second.status == Status.DONE, (first.error, second.error)
    assert [s.agent for s in steps(db, "t1")] == ["reader", "tagger", "collector"]
    assert [s.agent for s in steps(db, "t2")] == ["reader", "collector", "tagger"]
    assert steps(db, "t1")[1].output["tag"] == "tagged a,b"  # the tagger ran, on the items
    assert first.result == {"items": ["a", "b"], "tag": ""}  # from the memory the reader left
    assert first.outcome == "finalizer" and first.queued == []
    assert second.result == {"items": ["a", "b"], "tag": ""}  # the tagger's end kept it
    assert second.outcome == "finalizer" and second.memory["tag"].value == "tagged a,b"


GENERATOR = """\
from dataclasses import dataclass
from diskurs import PromptArgument
from diskurs.entities import ChatMessage, Role


@dataclass
class SummaryPrompt(PromptArgument):
    summary: str = ""
    messages: int = 0


async def heuristic_sequence(conversation, call_tool, llm_client):
    conversation = conversation.update(
        system_prompt=ChatMessage(role=Role.SYSTEM, content="Answer in one word."),
        user_prompt=ChatMessage(role=Role.USER, content="Name its meaning:", name="summariser"),
    )
    conversation = await llm_client.generate(conversation)
    arg = conversation.prompt_argument
    arg.summary = conversation.last_message.content
    arg.messages = len(conversation.chat)
    return conversation.update(prompt_argument=arg)
"""


def test_a_heuristic_sequence_generates_with_its_llm_client(runtime, db, allowed):
    """``llm_client.generate(conversation)`` asks the agent's model with the conversation's
    system prompt, chat and user prompt, and returns it with the user prompt and the reply
    appended (Diskurs' LLMClient.generate); the call is recorded among the step's tool calls."""
    config = """
    first_contact: summariser
    llms: [{name: fake, type: scripted}]
    agents:
      - name: summariser
        type: heuristic_finalizer
        llm: fake
        renderPrompt: false
        prompt: {type: heuristic_prompt, location: summariser, promptArgumentClass: SummaryPrompt}
        finalProperties: [summary, messages]
    """
    files = {
        "config.yml": config,
        "summariser/prompt.py": GENERATOR,
        "summariser/agent_description.txt": "summarises",
    }
    load(db, _write(allowed / "generated", files), "generated")
    model = Scripted()
    model.reply("Name its meaning:", {"text": "Meaning"})
    with runtime.model_wrapper(model.wrap):
        start(db, "h2", QUERY, "generated")
        settle(runtime, finished(db, "h2"))
    conv = conversation(db, "h2")
    assert conv.status == Status.DONE, conv.error
    assert conv.result == {"summary": "Meaning", "messages": 3}  # query, user prompt, reply
    asked = model.prompts[0].prompt
    assert asked.index("Answer in one word.") < asked.index(QUERY) < asked.index("Name its")
    [call] = tool_calls(db, "h2", "0000")
    assert call["status"] == "done"


NESTED = """
first_contact: boss
longtermMemory: {type: DeskMemory, location: memory.py}
llms: [{name: fake, type: scripted}]
agents:
  - name: boss
    type: conductor
    llm: fake
    prompt: {type: conductor_prompt, location: boss, canFinalizeName: ready, finalizeName: wrap_up}
    topics: [team]
    rules:
      - {name: delegate, description: x, location: boss, conditionName: always, targetAgent: team}
  - name: team
    type: conductor
    llm: fake
    prompt: {type: conductor_prompt, location: team, canFinalizeName: ready}
    topics: [classifier, answerer]
    supervisor: boss
    rules:
      - {name: first, description: x, location: team, conditionName: unclassified,
         targetAgent: classifier}
      - {name: then, description: x, location: team, conditionName: classified,
         targetAgent: answerer}
  - name: classifier
    type: multistep
    llm: fake
    prompt: {type: multistep_prompt, location: classifier, promptArgumentClass: ClassifierPrompt}
    topics: [team]
  - name: answerer
    type: heuristic
    prompt: {type: heuristic_prompt, location: answerer, promptArgumentClass: AnswererPrompt,
             heuristicSequenceName: answer}
    topics: [team]
"""


def test_a_conductor_runs_nested_in_another_and_hands_back_through_its_supervisor(
    runtime, db, allowed
):
    """Diskurs' nested conductors: the boss's rule gives the conversation to the team (a
    conductor among its topics), whose own rules route its agents; when the team can
    finalize, it hands the conversation to its supervisor, the boss, which finalizes."""
    files = {
        "config.yml": NESTED,
        "memory.py": MEMORY,
        "boss/prompt.py": BOSS,
        "boss/rules.py": "def always(conversation):\n    return True\n",
        "team/prompt.py": BOSS,
        "team/rules.py": RULES,
        "team/agent_description.txt": "a team that classifies and answers",
        "classifier/prompt.py": CLASSIFIER,
        "classifier/system_template.jinja2": "You classify support requests.",
        "classifier/user_template.jinja2": "Classify: {{ user_query }}",
        "classifier/agent_description.txt": "rates urgency",
        "answerer/prompt.py": ANSWERER,
        "answerer/agent_description.txt": "answers",
    }
    load(db, _write(allowed / "nested", files), "nested")
    start(db, "n1", QUERY, "nested")
    settle(runtime, finished(db, "n1"))
    conv = conversation(db, "n1")
    assert conv.status == Status.DONE, conv.error
    found = steps(db, "n1")
    assert [(s.kind, s.agent) for s in found] == [
        ("conductor", "boss"),
        ("conductor", "team"),
        ("agent", "classifier"),
        ("conductor", "team"),
        ("agent", "answerer"),
        ("conductor", "team"),
        ("conductor", "boss"),
    ]
    assert [(s.decision.by, s.decision.next_agent) for s in found if s.decision] == [
        ("rule", "team"),
        ("rule", "classifier"),
        ("rule", "answerer"),
        ("finalize", "boss"),  # the team's supervisor
        ("model", "FINISH"),  # the boss's finalize(memory)
    ]
    urgency = conv.memory["urgency"].value
    assert conv.outcome == "finalize"
    assert conv.result == {"answer": f"urgency {urgency}: {QUERY}", "urgency": urgency}


def test_a_conversation_id_given_again_goes_on_from_what_its_finalizer_stored(runtime, db, allowed):
    """Diskurs' conversation store: a finalizer that finalizes stores the conversation under
    its ``conversation_id`` (here a Firestore document), and ``ama`` with the same id goes on
    from it: the stored memory (its first ``user_query`` included, as Diskurs keeps it) lets
    the conductor finalize at once, to the finalizer."""
    from tools.diskurs_forum import DiskursInput, create_forum_from_config

    desk = _desk(allowed, finalizer=True)
    forum = create_forum_from_config(config_path=Path("config.yml"), base_path=desk, client=db)
    first = asyncio.run(forum.ama(DiskursInput(user_query=QUERY, conversation_id="s1")))
    again = asyncio.run(forum.ama(DiskursInput(user_query="And now?", conversation_id="s1")))
    fresh = asyncio.run(forum.ama(DiskursInput(user_query="Other", conversation_id="s2")))
    one, two = conversation(db, "s1"), conversation(db, "s1-2")
    assert one.status == two.status == Status.DONE, (one.error, two.error)
    assert first == one.result and again == two.result and again["closing"]
    assert [s.agent for s in steps(db, "s1")] == [
        "boss", "classifier", "boss", "answerer", "boss", "closer",
    ]  # fmt: skip
    assert [s.agent for s in steps(db, "s1-2")] == ["boss", "closer"]  # finalizes at once
    urgency = one.memory["urgency"].value
    assert two.memory["urgency"].value == urgency and two.memory["urgency"].agent == "store"
    assert two.memory["user_query"].value == QUERY and two.query == "And now?"
    stored = db.document("workflows/desk_closer/store/s1").get().to_dict()
    assert stored["conversation"] == "s1-2"  # the latest finalizer's
    assert stored["memory"]["answer"] == one.memory["answer"].value
    assert fresh["closing"] and steps(db, "s2")[1].agent == "classifier"  # another id: fresh


RESET = """
first_contact: reader
longtermMemory: {type: TopicMemory, location: memory.py}
llms: [{name: fake, type: scripted}]
agents:
  - name: reader
    type: heuristic
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: reader, promptArgumentClass: ReaderPrompt}
    topics: [boss, boss]
  - name: boss
    type: conductor
    llm: fake
    prompt: {type: conductor_prompt, location: boss}
    topics: [tagger]
    maxDispatches: 2
    rules:
      - {name: always, description: x, location: boss, conditionName: always, targetAgent: tagger}
  - name: tagger
    type: heuristic
    renderPrompt: false
    prompt: {type: heuristic_prompt, location: tagger, promptArgumentClass: TagPrompt}
    topics: [boss]
"""


def test_a_conductor_that_failed_counts_its_visits_from_0_in_the_next_topics_chain(
    runtime, db, allowed
):
    """Diskurs' conductor sets its count back once its fail (or finalize) has run: the reader
    publishes to the boss twice, and each chain reaches the boss's cap of 2 visits (the
    tagger's turn between them), so the second chain runs as the first."""
    reader = TOPIC_FILES["reader/prompt.py"] + (
        "\n\n        def heuristic_sequence(conversation, call_tool, llm_client):\n"
        "            return conversation\n"
    )
    files = {
        **TOPIC_FILES,
        "config.yml": RESET,
        "reader/prompt.py": reader,
        "boss/prompt.py": "",
        "boss/rules.py": "def always(conversation):\n    return True\n",
    }
    load(db, _write(allowed / "reset", files), "reset")
    start(db, "z1", QUERY, "reset")
    settle(runtime, finished(db, "z1"))
    conv = conversation(db, "z1")
    assert conv.status == Status.DONE and conv.outcome == "fail", conv.error
    assert [s.agent for s in steps(db, "z1")] == [
        "reader", "boss", "tagger", "boss", "boss", "tagger", "boss",
    ]  # fmt: skip
    assert conv.visits == {"boss": 2} and conv.settled == ["boss"]
