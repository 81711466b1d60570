"""An agent's tools made from a workflow's ``tools`` entries as Diskurs makes them: Diskurs' own
forum_setup example (a plain function, and one its ``create_`` factory makes from ``configs``),
dependencies from ``toolDependencies``, and the errors that name the document and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions.conductor.toolbox import agent_tools
from shared.conductor.documents import AgentDoc, ToolEntry, WorkflowDoc
from shared.llm.base import ToolCall
from shared.llm.tools import run_tool
from shared.models import DocumentError
from tools.load_workflow import read_workflow

ROOT = Path(__file__).resolve().parents[2]
FORUM = ROOT / "examples" / "diskurs" / "forum_setup"

TOOLS_FILE = """\
def create_greet(configs, directory):
    def greet(name: str) -> str:
        '''
        Greets a person found in the directory.

        :param name: Who.
        '''
        return f"{configs['greeting']}, {name} of {directory.street(name)}"
    return greet
"""

DIRECTORY_FILE = """\
class Directory:
    def __init__(self, name, streets):
        self.name, self.streets = name, streets

    @classmethod
    def create(cls, name, **parameters):
        return cls(name, parameters["streets"])

    def street(self, person):
        return self.streets.get(person, "nowhere")
"""


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", f"{FORUM.parent}:{tmp_path}")
    return tmp_path


def test_forum_setup_agents_get_its_tools_one_made_by_its_factory(allowed: Path) -> None:
    workflow, agents = read_workflow(FORUM)
    first = next(a for a in agents if a.name == "first_agent")
    tools = agent_tools("forum", workflow, first)
    assert sorted(tools) == ["my_func1", "my_func2"]  # the model sees the functions' names
    assert tools["my_func1"].spec.description == (
        "Returns a greeting message with the provided name.\nReturns: The greeting message."
    )
    assert tools["my_func2"].spec.parameters["required"] == ["bar"]
    farewell = run_tool(tools, ToolCall("1", "my_func2", {"bar": "Ann"}))
    assert farewell.content == "Goodbye, Ann, remember bar and qux!"  # its configs foo, baz


def _workflow(folder: Path, **entry: object) -> WorkflowDoc:
    return WorkflowDoc(
        agents=["helper"],
        tools=[ToolEntry.model_validate({"name": "greeter", "functionName": "greet", **entry})],
        tool_dependencies={
            "directory": {
                "className": "Directory",
                "modulePath": str(folder / "directory.py"),
                "parameters": {"streets": {"Ann": "Main St."}},
            }
        },
    )


def _agent(*tools: str) -> AgentDoc:
    return AgentDoc(name="helper", user_prompt="", module="workflows.x.prompt", tools=list(tools))


def test_a_factory_gets_its_configs_and_its_dependency_made_by_its_class(allowed: Path) -> None:
    (allowed / "tools.py").write_text(TOOLS_FILE)
    (allowed / "directory.py").write_text(DIRECTORY_FILE)
    wf = _workflow(
        allowed,
        modulePath=str(allowed / "tools.py"),
        configs={"greeting": "Hello"},
        dependencies=["directory"],
    )
    tools = agent_tools("w", wf, _agent("greeter"))
    result = run_tool(tools, ToolCall("1", "greet", {"name": "Ann"}))
    assert result.content == "Hello, Ann of Main St."
    assert json.loads(json.dumps(tools["greet"].spec.parameters))["required"] == ["name"]


@pytest.mark.parametrize(
    ("entry", "tools", "document", "field", "reason"),
    [
        ({}, ("nothing",), "workflows/w/agents/helper", "tools", "no tool 'nothing'"),
        ({}, ("greeter",), "workflows/w", "tools[0].modulePath", "needs modulePath"),
        (
            {"modulePath": "TOOLS", "dependencies": ["ledger"]},
            ("greeter",),
            "workflows/w",
            "tools[0].dependencies",
            "no toolDependencies entry 'ledger'",
        ),
        (
            {"modulePath": "TOOLS", "functionName": "greet_all"},
            ("greeter",),
            "workflows/w",
            "tools[0].functionName",
            "no function 'greet_all'",
        ),
    ],
)
def test_a_tool_that_cannot_be_made_names_the_document_and_field(
    allowed: Path,
    entry: dict[str, object],
    tools: tuple[str, ...],
    document: str,
    field: str,
    reason: str,
) -> None:
    (allowed / "tools.py").write_text(TOOLS_FILE)
    given = {k: str(allowed / "tools.py") if v == "TOOLS" else v for k, v in entry.items()}
    wf = _workflow(allowed, **given)
    with pytest.raises(DocumentError) as raised:
        agent_tools("w", wf, _agent(*tools))
    assert (raised.value.document, raised.value.field) == (document, field)
    assert reason in raised.value.reason
