"""Load a conductor workflow's assets into Firestore, where the console edits them.

    python -m tools.load_workflow workflows/example [--id example] [--api-type GEMINI --model M]

The folder holds ``config.yml`` and one folder per agent (``agent_description.txt``,
``system_prompt.jinja2``, ``user_prompt.jinja2``, ``prompt.py``). The documents are checked
against the models the functions read them with, and each agent's ``prompt.py`` is imported, so
a mistake is reported here rather than at the first step.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from google.cloud import firestore
from pydantic import ValidationError

from shared import paths
from shared.conductor.documents import AGENT, WORKFLOW, AgentDoc, WorkflowDoc
from shared.conductor.prompt_args import PromptArgument
from tools.owner import owned

REPO_ROOT = Path(__file__).resolve().parents[1]


class WorkflowError(ValueError):
    """An asset that cannot be loaded; the message names the file and field."""


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as error:
        raise WorkflowError(f"{path}: {error.strerror}") from None


def _module_of(folder: Path) -> str:
    try:
        relative = (folder / "prompt.py").resolve().relative_to(REPO_ROOT)
    except ValueError:
        raise WorkflowError(f"{folder}: agent folders must be inside {REPO_ROOT}") from None
    return ".".join(relative.with_suffix("").parts)


def _agent(folder: Path, entry: dict[str, Any], model: dict[str, Any] | None) -> AgentDoc:
    name = entry.get("name")
    if not isinstance(name, str):
        raise WorkflowError(f"{folder}/config.yml: agents: every agent needs a name")
    where = folder / entry.get("folder", name)
    data = {
        "name": name,
        "description": _read(where / "agent_description.txt").strip(),
        "systemPrompt": _read(where / "system_prompt.jinja2"),
        "userPrompt": _read(where / "user_prompt.jinja2"),
        "module": _module_of(where),
        "systemPromptArgument": entry.get("system_prompt_argument", "SystemPromptArgument"),
        "userPromptArgument": entry.get("user_prompt_argument", "UserPromptArgument"),
        "systemArguments": entry.get("prompt_arguments") or {},
        "maxAttempts": entry.get("max_attempts", 3),
    }
    if entry.get("model") or model:
        data["modelSettings"] = entry.get("model") or model
    try:
        return AgentDoc.model_validate(data)
    except ValidationError as error:
        raise WorkflowError(f"{where}: {_first(error)}") from None


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def _check_code(agent: AgentDoc) -> None:
    """Import prompt.py and find its argument classes, as the functions will."""
    import importlib

    try:
        module = importlib.import_module(agent.module)
    except ImportError as error:
        raise WorkflowError(f"{agent.module}: {error}") from None
    for attr in (agent.user_prompt_argument, agent.system_prompt_argument):
        found = getattr(module, attr, None)
        required = attr == agent.user_prompt_argument or found is not None
        if required and not (isinstance(found, type) and issubclass(found, PromptArgument)):
            raise WorkflowError(f"{agent.module}: no PromptArgument class {attr!r}")


def read_workflow(folder: Path) -> tuple[WorkflowDoc, list[AgentDoc]]:
    """The workflow document and its agents' documents, from the folder's assets."""
    try:
        config = yaml.safe_load(_read(folder / "config.yml")) or {}
    except yaml.YAMLError as error:
        raise WorkflowError(f"{folder}/config.yml: {error}") from None
    if not isinstance(config, dict):
        raise WorkflowError(f"{folder}/config.yml: not a mapping")
    entries = config.get("agents") or []
    agents = [_agent(folder, entry, config.get("model")) for entry in entries]
    for agent in agents:
        _check_code(agent)
    data = {
        "name": config.get("name", folder.name),
        "description": config.get("description", ""),
        "agents": [a.name for a in agents],
        "conductor": config.get("conductor") or {},
        "maxAgentSteps": config.get("max_agent_steps", 4),
    }
    if config.get("model"):
        data["modelSettings"] = config["model"]
    try:
        return WorkflowDoc.model_validate(data), agents
    except ValidationError as error:
        raise WorkflowError(f"{folder}/config.yml: {_first(error)}") from None


def load(client: firestore.Client, folder: Path, workflow_id: str | None = None) -> str:
    """Write the workflow and its agents (replacing earlier versions); returns the id."""
    workflow, agents = read_workflow(folder)
    workflow_id = workflow_id or workflow.name or folder.name
    batch = client.batch()
    batch.set(
        client.document(paths.build(WORKFLOW, workflowId=workflow_id)),
        owned(workflow.to_firestore()),
    )
    for agent in agents:
        path = paths.build(AGENT, workflowId=workflow_id, agentName=agent.name)
        batch.set(client.document(path), agent.to_firestore())
    batch.commit()
    return workflow_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the workflow folder (with config.yml)")
    parser.add_argument("--id", help="workflow document id (default: config.yml's name)")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    args = parser.parse_args(argv)
    if not args.project:
        print("error: no project: pass --project or set GOOGLE_CLOUD_PROJECT", file=sys.stderr)
        return 2
    try:
        workflow_id = load(firestore.Client(project=args.project), args.folder, args.id)
    except WorkflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"workflow  workflows/{workflow_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
