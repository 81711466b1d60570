"""Parallel agents, the parts that need no emulator: the fan-out's documents, and Diskurs'
example branch and join functions run on Diskurs' own conversation."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from functions.conductor import parallel
from shared.conductor.branches import Branch, JoinInput, branch_unit
from shared.conductor.documents import Step, StepKind

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diskurs" / "parallel_agent" / "agents"


def test_a_fan_out_is_a_join_step_and_one_branch_per_argument():
    step = Step(index=1, kind=StepKind.AGENT, agent="P", turn=1, agent_step=2)
    join = parallel.join_step(step, 2)
    branches = parallel.new_branches(join, [{"urls": "a"}, {"urls": "b"}])
    assert (join.index, join.kind, join.agent, join.turn) == (2, "join", "P", 1)
    assert JoinInput.model_validate(join.input).branches == 2
    assert [(b.index, b.join, b.agent, b.input) for b in branches] == [
        (0, 2, "P", {"urls": "a"}),
        (1, 2, "P", {"urls": "b"}),
    ]
    messages = parallel.branch_messages("c", join, branches)
    assert [(m.index, m.branch, m.agent_step) for m in messages] == [(2, 0, 1), (2, 1, 1)]
    assert parallel.branch_messages("c", None, branches) == []
    assert branch_unit("0002", 1) == "0002-01"
    assert Branch.model_validate(branches[0].to_firestore()).agent_step == 1


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_examples_branch_and_join_functions_run_on_diskurs_conversations(monkeypatch):
    folder = EXAMPLE / "Parallel_Agent"
    prompt = _load("prompt", folder / "prompt.py")  # Diskurs' bare name: parallelize imports it
    monkeypatch.setitem(sys.modules, "prompt", prompt)
    code = parallel.parallel_code(_load("parallelize_test", folder / "parallelize.py"), "doc")
    cls = prompt.ParallelMultiStepUserPrompt
    turn = {"urls": ["www.acme.com", "innocence.org"], "branching": True}
    branches = parallel.branch_arguments(code, cls, turn, "Parallel_Agent", "c1")
    assert [(b["urls"], b["branching"], b["joining"]) for b in branches] == [
        ("www.acme.com", False, True),
        ("innocence.org", False, True),
    ]
    replies = [
        {**branches[0], "list_name": "whitelist", "action": "add"},
        {**branches[1], "list_name": "blacklist", "action": "remove"},
    ]
    joined = parallel.joined_argument(code, cls, replies, "Parallel_Agent", "c1")
    assert joined["instructions"] == [
        {"url": "www.acme.com", "list_name": "whitelist", "action": "add"},
        {"url": "innocence.org", "list_name": "blacklist", "action": "remove"},
    ]


def test_a_missing_join_function_names_the_field():
    module = ModuleType("workflows.x.parallelize")
    module.branch_conversation = lambda c: [c]  # type: ignore[attr-defined]
    with pytest.raises(Exception) as missing:
        parallel.parallel_code(module, "workflows/w/agents/P", join_name="join_conversation")
    error = missing.value
    assert (getattr(error, "field", None), getattr(error, "document", None)) == (
        "joinConversationsName",
        "workflows/w/agents/P",
    )
    assert "no function named 'join_conversation'" in str(error)


def test_a_dataclass_argument_keeps_the_string_of_a_list_or_string_field():
    """Diskurs' from_dict makes 'www.acme.com' a list of characters; stored arguments load as
    they were written."""
    from shared.conductor import arguments

    folder = EXAMPLE / "Parallel_Agent"
    cls = _load("prompt_args_test", folder / "prompt.py").ParallelMultiStepUserPrompt
    stored = {
        "urls": "www.acme.com",
        "instructions": [{"url": "a", "list_name": "b", "action": "c"}],
    }
    loaded = arguments.load(cls, stored)
    assert loaded.urls == "www.acme.com"
    assert type(loaded.instructions[0]).__name__ == "URLInstruction"
    assert arguments.dump(loaded)["urls"] == "www.acme.com"
    assert cls.from_dict(stored).urls[:3] == ["w", "w", "w"]  # what it was before
