"""Issue 28 row 10: a workflow the conductor cannot run as written is refused where it is
loaded (``tools.load_workflow``, the console's document editor), one clear message each: an
unknown key (with the key it probably meant), a Jinja2 template that does not compile (file and
line), a routing rule naming no agent. Before, ``memory_field`` for ``memory_fields`` was kept in
silence and the conductor looped to its dispatch cap."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from console import validation
from shared.conductor import checks
from tools.load_workflow import WorkflowError, read_workflow

EXAMPLE = Path(__file__).resolve().parents[2] / "workflows" / "example"

Edit = Callable[[Path], None]


def _example(tmp_path: Path) -> Path:
    """A copy of the example workflow; its agents' ``prompt.py`` link to the deployed ones."""
    folder = tmp_path / "wf"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    for agent in ("extractor", "answerer"):
        (folder / agent / "prompt.py").symlink_to(EXAMPLE / agent / "prompt.py")
    return folder


def _replace(relative: str, old: str, new: str) -> Edit:
    def edit(folder: Path) -> None:
        path = folder / relative
        text = path.read_text()
        assert old in text, (relative, old)
        path.write_text(text.replace(old, new, 1))

    return edit


def _refused(tmp_path: Path, edit: Edit) -> str:
    folder = _example(tmp_path)
    edit(folder)
    with pytest.raises(WorkflowError) as refused:
        read_workflow(folder)
    return str(refused.value)


def test_the_example_loads(tmp_path):
    workflow, agents = read_workflow(_example(tmp_path))
    assert workflow.conductor.memory_fields == ["name", "topic", "user_question", "answer"]
    assert [a.name for a in agents] == ["extractor", "answerer"]


@pytest.mark.parametrize(
    ("old", "new", "field", "meant"),
    [
        ("  memory_fields:", "  memory_field:", "conductor.memory_field", "memory_fields"),
        ("max_agent_steps:", "max_agent_step:", "max_agent_step", "max_agent_steps"),
        (
            "    prompt_arguments:",
            "    prompt_argument:",
            "agents[0].prompt_argument",
            "prompt_arguments",
        ),
        ("{when_missing: [topic]", "{when_mising: [topic]", "rules[0].when_mising", "when_missing"),
        ("finish_field:", "finnish_field:", "conductor.finnish_field", "finish_field"),
    ],
)
def test_an_unknown_key_in_config_yml_is_refused_with_what_was_meant(
    tmp_path, old, new, field, meant
):
    message = _refused(tmp_path, _replace("config.yml", old, new))
    assert "config.yml: " in message and field in message, message
    key = field.rsplit(".", 1)[-1]
    assert f"unknown key '{key}' (did you mean '{meant}'?)" in message


def test_a_template_syntax_error_names_the_file_and_line(tmp_path):
    message = _refused(tmp_path, _replace("answerer/user_prompt.jinja2", "{{", "\n\n{{ broken }"))
    assert message.startswith(str(tmp_path / "wf" / "answerer" / "user_prompt.jinja2")), message
    assert message.endswith("template syntax error on line 3: unexpected '}'"), message


def test_a_conductor_template_in_config_yml_is_compiled(tmp_path):
    edit = _replace("config.yml", "conductor:\n", "conductor:\n  user_prompt: '{% if x %}'\n")
    message = _refused(tmp_path, edit)
    assert "config.yml: conductor.user_prompt: template syntax error on line 1" in message


def test_a_rule_naming_no_agent_is_refused(tmp_path):
    message = _refused(tmp_path, _replace("config.yml", "then: answerer", "then: answerrer"))
    assert "config.yml: conductor.rules[2].then: 'answerrer' is not one of" in message
    assert "did you mean 'answerer'?" in message


def test_the_console_refuses_the_same_faults_in_the_documents(tmp_path):
    workflow, agents = read_workflow(_example(tmp_path))
    doc = workflow.to_firestore()
    assert validation.validate("workflows/w", doc) is None
    typo = {**doc, "conductor": {**doc["conductor"], "memoryField": ["answer"]}}
    del typo["conductor"]["memoryFields"]
    problem = validation.validate("workflows/w", typo)
    assert problem is not None and problem.field == "conductor.memoryField"
    assert "did you mean 'memoryFields'?" in problem.reason
    rules = [{"then": "extracter"}]
    problem = validation.validate("workflows/w", {**doc, "conductor": {"rules": rules}})
    assert problem is not None and problem.field == "conductor.rules[0].then"
    agent = {**agents[0].to_firestore(), "userPrompt": "{% for x in y %}"}
    problem = validation.validate("workflows/w/agents/extractor", agent)
    assert problem is not None and problem.field == "userPrompt"
    assert "syntax error on line 1" in problem.reason


def test_an_owned_workflow_document_is_not_an_unknown_key():
    owned = {"agents": ["a"], "creator": "x@example.com", "permissions": {"visibility": "private"}}
    assert checks.parse_workflow("workflows/w", owned).creator == "x@example.com"
