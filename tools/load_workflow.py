"""Load a conductor workflow's assets into Firestore, where the console edits them.

    python -m tools.load_workflow workflows/example [--id example]
    python -m tools.load_workflow path/to/diskurs_project [--config parallel_config.yaml]

The folder holds ``config.yml`` and one folder per agent (``agent_description.txt``,
``system_prompt.jinja2``, ``user_prompt.jinja2``, ``prompt.py``). Before anything is written,
``config.yml`` is read strictly (an unknown key is refused, naming the key it probably meant),
every Jinja2 template is compiled (a syntax error names the file and line), every routing rule
must name an agent of the workflow, the documents are checked against the models the functions
read them with (``shared.conductor.checks``), and each agent's ``prompt.py`` is imported: a
mistake is reported here, one clear message, rather than at the first step.

A Diskurs project (its ``config.yml`` with ``first_contact`` and typed agents, as Diskurs spells
it) is read by ``tools.diskurs_config`` into the same documents; what Diskurs would drop or
guess in silence is printed as warnings and kept on the workflow document.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from google.cloud import firestore
from pydantic import BaseModel, ConfigDict, Field

from shared import paths
from shared.conductor import checks
from shared.conductor.documents import AGENT, WORKFLOW, AgentDoc, ConductorConfig, WorkflowDoc
from shared.conductor.human import HumanConfig
from shared.conductor.prompt_args import PromptArgument
from shared.models import DocumentError
from tools import diskurs_config
from tools.owner import owned

REPO_ROOT = Path(__file__).resolve().parents[1]


class WorkflowError(ValueError):
    """An asset that cannot be loaded; the message names the file and field."""


class _File(BaseModel):
    """A map of ``config.yml``: snake_case keys, an unknown one refused."""

    model_config = ConfigDict(extra="forbid")


class AgentEntry(_File):
    """One item of ``config.yml``'s ``agents``."""

    name: str
    folder: str | None = None
    """The agent's folder, relative to the workflow's (default: its name)."""
    system_prompt_argument: str = "SystemPromptArgument"
    user_prompt_argument: str = "UserPromptArgument"
    prompt_arguments: dict[str, Any] = {}
    """Values of the system prompt arguments."""
    max_attempts: int = 3
    model: dict[str, Any] | None = None
    human: HumanConfig | None = None
    """A person answers (``shared.conductor.human``); its folder needs no system prompt."""


class ConfigFile(_File):
    """``config.yml``. Its ``conductor`` map is the workflow document's own (strict too)."""

    name: str | None = None
    description: str = ""
    model: dict[str, Any] | None = None
    """Model settings (apiType, modelName, ...) of every agent that sets none."""
    max_agent_steps: int = 4
    conductor: ConductorConfig = Field(default_factory=ConductorConfig)
    agents: list[AgentEntry] = []


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as error:
        raise WorkflowError(f"{path}: {error.strerror}") from None


def _refused(where: Path | str, error: DocumentError) -> WorkflowError:
    return WorkflowError(f"{where}: {error.field}: {error.reason}")


def _module_of(folder: Path) -> str:
    try:
        relative = (folder / "prompt.py").resolve().relative_to(REPO_ROOT)
    except ValueError:
        raise WorkflowError(f"{folder}: agent folders must be inside {REPO_ROOT}") from None
    return ".".join(relative.with_suffix("").parts)


def _compiled(files: dict[Path, str]) -> None:
    """Every template compiles; the first that does not is refused with its file and line."""
    for path, source in files.items():
        for _, reason in checks.template_faults({path.name: source}):
            raise WorkflowError(f"{path}: {reason}")


def _agent(folder: Path, entry: AgentEntry, model: dict[str, Any] | None) -> AgentDoc:
    where = folder / (entry.folder or entry.name)
    system, user = where / "system_prompt.jinja2", where / "user_prompt.jinja2"
    optional = entry.human is not None and not system.exists()
    templates = {system: "" if optional else _read(system), user: _read(user)}
    _compiled(templates)
    data = {
        "name": entry.name,
        "description": _read(where / "agent_description.txt").strip(),
        "systemPrompt": templates[system],
        "userPrompt": templates[user],
        "module": _module_of(where),
        "systemPromptArgument": entry.system_prompt_argument,
        "userPromptArgument": entry.user_prompt_argument,
        "systemArguments": entry.prompt_arguments,
        "maxAttempts": entry.max_attempts,
    }
    if entry.model or model:
        data["modelSettings"] = entry.model or model
    if entry.human is not None:
        data["human"] = entry.human.to_firestore()
    try:
        return checks.parse_agent(str(where), data)
    except DocumentError as error:
        raise _refused(where, error) from None


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


def read_config(path: Path) -> ConfigFile:
    """``config.yml``, strictly: an unknown key is refused with the key it probably meant."""
    raw = _raw(path)
    if not isinstance(raw, dict):
        raise WorkflowError(f"{path}: not a mapping")
    try:
        return checks.parse(ConfigFile, str(path), raw)
    except DocumentError as error:
        raise _refused(path, error) from None


def _raw(path: Path) -> Any:
    try:
        return yaml.safe_load(_read(path)) or {}
    except yaml.YAMLError as error:
        raise WorkflowError(f"{path}: {error}") from None


def read_workflow(
    folder: Path, config_file: Path | None = None
) -> tuple[WorkflowDoc, list[AgentDoc]]:
    """The workflow document and its agents' documents (a Diskurs project's conductor among
    them), from the folder's assets in either format, each checked as the functions will."""
    try:
        path = diskurs_config.find_config(folder, config_file)
    except diskurs_config.DiskursConfigError as error:
        raise WorkflowError(str(error)) from None
    raw = _raw(path)
    if diskurs_config.is_diskurs_config(raw):
        return read_diskurs(folder, path, raw)
    return read_own(folder, path)


def read_diskurs(
    folder: Path, path: Path, raw: dict[str, Any]
) -> tuple[WorkflowDoc, list[AgentDoc]]:
    """A Diskurs project, through ``tools.diskurs_config``."""
    try:
        project = diskurs_config.read_project(folder, path.resolve(), REPO_ROOT, raw)
    except diskurs_config.DiskursConfigError as error:
        raise WorkflowError(str(error)) from None
    agents = []
    for data in project.agents:
        where = Path(data.get("promptLocation") or path)
        try:
            agents.append(checks.parse_agent(str(where), data))
        except DocumentError as error:
            raise _refused(where, error) from None
    data = {"name": folder.resolve().name, **project.workflow}
    try:
        return checks.parse_workflow(str(path), data), agents
    except DocumentError as error:
        raise _refused(path, error) from None


def read_own(folder: Path, path: Path) -> tuple[WorkflowDoc, list[AgentDoc]]:
    """This project's format."""
    config = read_config(path)
    conductor = {
        "conductor.system_prompt": config.conductor.system_prompt,
        "conductor.user_prompt": config.conductor.user_prompt,
    }
    for field, reason in checks.template_faults(conductor):
        raise WorkflowError(f"{path}: {field}: {reason}")
    agents = [_agent(folder, entry, config.model) for entry in config.agents]
    for agent in agents:
        _check_code(agent)
    data = {
        "name": config.name if config.name is not None else folder.name,
        "description": config.description,
        "agents": [a.name for a in agents],
        "conductor": config.conductor.to_firestore(),
        "maxAgentSteps": config.max_agent_steps,
    }
    if config.model:
        data["modelSettings"] = config.model
    try:
        return checks.parse_workflow(str(path), data), agents
    except DocumentError as error:
        raise _refused(path, error) from None


def load(
    client: firestore.Client,
    folder: Path,
    workflow_id: str | None = None,
    config_file: Path | None = None,
) -> str:
    """Write the workflow and its agents (replacing earlier versions); returns the id."""
    workflow, agents = read_workflow(folder, config_file)
    return write(client, workflow, agents, workflow_id or workflow.name or folder.name)


def write(
    client: firestore.Client, workflow: WorkflowDoc, agents: list[AgentDoc], workflow_id: str
) -> str:
    """The documents, in one batch."""
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
    parser.add_argument("--config", type=Path, help="the config file (default: config.yml)")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    args = parser.parse_args(argv)
    if not args.project:
        print("error: no project: pass --project or set GOOGLE_CLOUD_PROJECT", file=sys.stderr)
        return 2
    try:
        workflow, agents = read_workflow(args.folder, args.config)
        client = firestore.Client(project=args.project)
        workflow_id = write(client, workflow, agents, args.id or workflow.name or args.folder.name)
    except WorkflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for warning in workflow.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"workflow  workflows/{workflow_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
