"""What a cold start imports: a deployed function loads functions/main.py with its name in
``FUNCTION_TARGET`` and must import its own trigger family and no other, and no model provider's
SDK until a call needs that provider. Each case runs in a fresh interpreter, as an instance
starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from functions.registry import REGISTRY, get

REPO_ROOT = Path(__file__).resolve().parents[2]
SDKS = ("anthropic", "openai", "google.genai")
FAMILIES = sorted({spec.handler.partition(":")[0] for spec in REGISTRY})
"""The handler modules of the registry: one trigger family each (and the REST API)."""


def _run(target: str, code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env, "FUNCTION_TARGET": target}
    env.pop("DLAB_MODEL_OVERRIDE", None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )


def _imported(
    target: str, calls: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> list[set[str]]:
    """The modules in ``sys.modules`` once ``functions.main`` is loaded as the deployed
    ``target`` ("" for none), then after each of ``calls`` (statements run one after another)."""
    snapshot = "print(json.dumps(sorted(sys.modules)))"
    code = "\n".join(["import json, sys", "import functions.main", snapshot])
    code += "".join(f"\n{call}\n{snapshot}" for call in calls)
    out = _run(target, code, env or {})
    assert out.returncode == 0, out.stderr
    return [set(json.loads(line)) for line in out.stdout.splitlines()[-1 - len(calls) :]]


def test_the_entry_points_alone_import_no_trigger_family_and_no_sdk() -> None:
    [modules] = _imported("")
    assert modules & {*FAMILIES, *SDKS} == set()
    assert "google.cloud.pubsub_v1" not in modules  # imported at the first publish


@pytest.mark.parametrize("target", ["onParticipantUpdated", "api"])
def test_a_deployed_function_imports_its_own_trigger_family_only(target: str) -> None:
    [modules] = _imported(target)
    own = get(target).handler.partition(":")[0]
    assert modules & set(FAMILIES) == {own}
    assert modules & set(SDKS) == set()


def test_a_provider_sdk_is_imported_at_the_first_call_that_needs_it() -> None:
    order = (("SCRIPTED", None), ("OPENAI", "openai"))
    calls = tuple(
        f"from shared.llm.providers import client_for; client_for({api_type!r})"
        for api_type, _ in order
    )
    at_start, *after = _imported("onAgentTurn", calls)
    assert at_start & {*FAMILIES, *SDKS} == {"functions.triggers.chat"}
    expected: set[str] = set()
    for (api_type, sdk), modules in zip(order, after, strict=True):
        expected |= {sdk} if sdk else set()
        assert modules & set(SDKS) == expected, f"after client_for({api_type!r})"


def test_the_providers_named_to_preload_are_imported_while_the_instance_starts() -> None:
    [modules] = _imported("onAgentTurn", env={"DLAB_PRELOAD_PROVIDERS": " OPENAI, SCRIPTED"})
    assert modules & set(SDKS) == {"openai"}
    bad = _run("onAgentTurn", "import functions.main", {"DLAB_PRELOAD_PROVIDERS": "OPENAI,GPT"})
    assert bad.returncode != 0
    assert "DLAB_PRELOAD_PROVIDERS" in bad.stderr and "'GPT'" in bad.stderr, bad.stderr[-2000:]


LIGHT_COMMANDS = (
    "bench",
    "bench.cost",
    "bench.parallel",
    "bench.society",
    "bench.stress_chat",
    "emulator",
)
"""Commands whose ``--help`` answers before the stack is imported (issue 38 item 3: under 1 s)."""
TABLES = ("functions.registry",)
"""What such a command may import of ``functions``: the registry, a table (``make up``'s
``--ruleset`` choices come from the deploy tooling, which reads it)."""


@pytest.mark.parametrize("command", LIGHT_COMMANDS)
def test_a_command_answers_help_without_importing_the_stack(command: str) -> None:
    code = "\n".join(
        [
            "import runpy, sys",
            f"TABLES = {TABLES!r}",
            f"sys.argv = [{command!r}, '--help']",
            "try:",
            f"    runpy.run_module({command!r}, run_name='__main__', alter_sys=True)",
            "except SystemExit as leaving:",
            "    assert leaving.code in (0, None), leaving.code",
            "stack = ('google.cloud.', 'functions.')",
            "print(sorted(m for m in sys.modules if m.startswith(stack) and m not in TABLES))",
        ]
    )
    out = _run("", code, {})
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]"
