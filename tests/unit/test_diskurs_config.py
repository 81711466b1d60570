"""Diskurs projects as Diskurs spells them: the reader of their config.yml, their dataclass prompt
arguments behind our interface, and the scripted model filling defaulted fields.

No ``from __future__ import annotations`` here: Diskurs converts a reply's values with the
dataclass fields' runtime types, so its prompt arguments are written without it (in Diskurs too).
"""

import random
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest
from diskurs import InputField, LockedField, OutputField
from diskurs import PromptArgument as DiskursArgument

from shared.conductor import arguments
from shared.conductor.documents import AgentType, WorkflowFormat
from shared.conductor.prompt_args import PromptArgument, PromptValidationError, hinted
from shared.llm.scripted import generate_value
from tools.load_workflow import WorkflowError, read_workflow

ROOT = Path(__file__).resolve().parents[2]
FORUM = ROOT / "examples" / "diskurs" / "forum_setup"


def test_diskurs_forum_setup_loads_as_diskurs_reads_it_with_warnings():
    workflow, agents = read_workflow(FORUM)
    assert workflow.format == WorkflowFormat.DISKURS
    assert workflow.agents == ["first_agent", "second_agent"]
    assert workflow.starts_with() == "conductor_agent"
    assert workflow.conductor.topics == ["first_agent", "second_agent"]
    assert workflow.conductor.max_dispatches == 50  # Diskurs' default
    assert workflow.conductor.max_attempts == 10  # the conductor's maxTrials
    assert workflow.conductor.longterm_memory_class == "MyConductorLongtermMemory"
    by_name = {a.name: a for a in agents}
    assert by_name["conductor_agent"].type == AgentType.CONDUCTOR
    first = by_name["first_agent"]
    assert first.user_prompt_argument == "FirstPromptArgument"
    assert first.system_prompt_argument == ""  # the system template takes the same argument
    assert (first.max_reasoning_steps, first.max_attempts) == (25, 5)
    assert by_name["second_agent"].max_reasoning_steps == 5  # Diskurs' default
    assert first.topics == ["conductor_agent"]
    assert first.prompt_location == "examples/diskurs/forum_setup/agents/first_agent"
    assert workflow.model_settings.api_type == "SCRIPTED"
    joined = "\n".join(workflow.warnings)
    assert "'finalizer_agent' is not an agent" in joined
    assert "config.yml:26: agents[1] (first_agent).prompt: " in joined
    assert "using FirstPromptArgument (line 8)" in joined  # its class line in prompt.py
    assert "default conductor prompt argument" in joined
    assert "userPrompt uses ['content'], no fields of FirstPromptArgument" in joined


def _project(tmp_path: Path, config: str, prompt: str) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "config.yml").write_text(config)
    (tmp_path / "a" / "prompt.py").write_text(prompt)
    for name in ("system_template.jinja2", "user_template.jinja2", "agent_description.txt"):
        (tmp_path / "a" / name).write_text("hello {{ x }}")
    return tmp_path


PROMPT = """\
from dataclasses import dataclass
from diskurs import PromptArgument

@dataclass
class A(PromptArgument):
    x: str = ""
"""


def test_a_key_diskurs_ignores_and_a_missing_class_are_refused_with_their_line(tmp_path):
    config = """
        firstContact: a
        agents:
          - name: a
            type: multistep
            maxTrails: 3
            prompt: {type: multistep_prompt, location: a, promptArgumentClass: A}
    """
    with pytest.raises(
        WorkflowError, match=r"config.yml:6: .*maxTrails: unknown key .*'maxTrials'"
    ):
        read_workflow(_project(tmp_path, config, PROMPT))
    (tmp_path / "config.yml").write_text(
        (tmp_path / "config.yml")
        .read_text()
        .replace("maxTrails", "maxTrials")
        .replace("promptArgumentClass: A", "promptArgumentClass: B")
    )
    (tmp_path / "a" / "prompt.py").write_text(
        PROMPT + "\n\n@dataclass\nclass C(PromptArgument):\n    y: str = ''\n"
    )
    with pytest.raises(WorkflowError, match=r"config.yml:7: .*\['B'\] not in a/prompt.py"):
        read_workflow(tmp_path)


def test_an_unknown_agent_type_and_a_topic_naming_no_agent_are_refused(tmp_path):
    config = """
        first_contact: a
        agents:
          - {name: a, type: multistepp, prompt: {type: multistep_prompt, location: a}}
    """
    with pytest.raises(WorkflowError, match="'multistepp' is not one of Diskurs' types"):
        read_workflow(_project(tmp_path, config, PROMPT))
    (tmp_path / "config.yml").write_text(
        "first_contact: a\nagents:\n  - {name: a, type: multistep, topics: [b],"
        " prompt: {type: multistep_prompt, location: a, promptArgumentClass: A}}\n"
    )
    with pytest.raises(WorkflowError, match="'b' is not an agent"):
        read_workflow(tmp_path)


@dataclass
class Found(DiskursArgument):
    query: InputField[str] = ""
    answer: OutputField[str] = ""
    note: str = ""
    secret: LockedField[str] = "kept"
    urgency: int = 0
    items: InputField[list[str]] = field(default_factory=list)


def test_diskurs_arguments_read_and_write_the_memory_by_their_marks():
    assert arguments.reads_memory(Found) == {"query", "items"}
    assert arguments.writes_memory(Found) == {"answer"}
    first = arguments.initial(Found, {"query": "q", "answer": "old", "note": "n"}, locked={})
    assert (first["query"], first["answer"], first["note"]) == ("q", "", "")
    schema = arguments.reply_schema(Found, known=first)
    assert sorted(schema["properties"]) == ["answer", "note", "urgency"]


def test_a_diskurs_reply_updates_the_arguments_as_diskurs_does():
    current = {"query": "q", "answer": "", "note": "before", "secret": "kept", "urgency": 0}
    new = arguments.parse(Found, {"answer": "42", "note": ""}, current)
    assert (new.answer, new.note, new.query, new.secret) == ("42", "before", "q", "kept")
    with pytest.raises(PromptValidationError, match="Extra fields provided: nope"):
        arguments.parse(Found, {"nope": 1}, current)


class Urgent(PromptArgument):
    urgency: int = hinted(0, minimum=1, maximum=5)
    label: str = hinted("none", enum=["low", "high"])


@pytest.mark.parametrize("seed", range(20))
def test_the_scripted_model_fills_defaulted_fields_within_their_bounds(seed):
    for cls in (Urgent, Found):
        known = arguments.defaults(cls)
        schema = arguments.reply_schema(cls, known=known)
        value = generate_value(random.Random(seed), schema)
        jsonschema.validate(value, schema)
        if cls is Urgent:
            assert 1 <= value["urgency"] <= 5 and value["label"] in ("low", "high")


def test_a_known_value_is_kept_by_the_scripted_model():
    schema = Urgent.reply_schema(known={"urgency": 4})
    assert generate_value(random.Random(1), schema)["urgency"] == 4


POSTPONED = """\
from __future__ import annotations

from dataclasses import dataclass
from diskurs import OutputField, PromptArgument


@dataclass
class Rated(PromptArgument):
    urgency: OutputField[int] = 0
    tags: list[str] | str = ""
"""


def test_postponed_annotations_are_resolved_as_diskurs_resolves_them(tmp_path):
    from shared.conductor.code_files import load_file

    (tmp_path / "postponed.py").write_text(POSTPONED)
    cls = load_file(tmp_path / "postponed.py").Rated
    reply = arguments.parse(cls, {"urgency": "3"}, arguments.defaults(cls))
    assert reply.urgency == 3 and arguments.writes_memory(cls) == {"urgency"}
    (tmp_path / "unresolved.py").write_text(POSTPONED.replace("int] = 0", "Urgency] = 0"))
    with pytest.raises(NameError, match=r"class Rated \(line 8\).*'Urgency' is not defined"):
        load_file(tmp_path / "unresolved.py")


@dataclass
class Urls(DiskursArgument):
    urls: list[str] | str | None = None
    count: int = 0


@pytest.mark.parametrize("value", ["www.acme.com", ["www.acme.com", "www.example.com"]])
def test_a_union_field_keeps_the_member_its_value_fits(value):
    """Diskurs' parser converts with the union's first member (a string: its characters)."""
    reply = arguments.parse(Urls, {"urls": value, "count": "2"}, arguments.defaults(Urls))
    assert (reply.urls, reply.count) == (value, 2)
    assert arguments.load(Urls, arguments.dump(reply)).urls == value
