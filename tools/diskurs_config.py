"""Read a Diskurs project folder (its ``config.yml`` as Diskurs spells it, its agents' folders)
into the conductor's documents, so a Diskurs project runs here with only its ``llms:`` changed.

Diskurs reads its configuration leniently: keys are camelCase or snake_case, an unknown key is
dropped in silence, ``${VAR}`` without a value becomes ''. We read it the same way (so a
project loads as Diskurs loads it) but say what Diskurs would have dropped or guessed: each such
finding is a warning, printed by ``tools.load_workflow`` and kept on the workflow document. What
Diskurs itself cannot run (a class or function that is not there, an unknown agent type, a
topic naming no agent) is an error naming the file and the key.

Both spellings Diskurs has used are understood: the prompt argument class as
``promptArgumentClass`` (or the older ``userPromptArgumentClass`` / ``systemPromptArgumentClass``),
the memory class as the top-level ``longtermMemory: {type, location}`` (or the older conductor
``prompt.longtermMemoryClass``).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.resources
import os
import re
from pathlib import Path
from typing import Any

import yaml
from diskurs.prompt import DefaultConductorPromptArgument
from jinja2 import Environment, TemplateSyntaxError, meta

from shared.conductor import arguments
from shared.conductor.code_files import definition_line, load_file
from shared.conductor.documents import (
    AgentType,
    ConductorConfig,
    RouteFunction,
    ToolEntry,
    WorkflowFormat,
)
from shared.models import ApiType

CONFIG_NAMES = ("config.yml", "config.yaml")
PROMPT_TYPES = {
    "multistep_prompt",
    "conductor_prompt",
    "heuristic_prompt",
    "llm_compiler_prompt",
}
_TEMPLATES = Environment()
"""Parses only, to list a template's variables."""
LLM_COMPILER_TEMPLATES = (
    "llm_compiler_planning_system_template.jinja2",
    "llm_compiler_planning_user_template.jinja2",
)
"""Diskurs' packaged planning templates: an LLM compiler's prompts unless its folder has its own."""
DEFAULT_MAX_DISPATCHES = 50
DEFAULT_MAX_TRIALS = 5
DEFAULT_REASONING_STEPS = 5
LLM_TYPES = {t.value.lower(): t for t in ApiType}

_TOP = {
    "first_contact", "tool_executor_type", "dispatcher_type", "custom_modules", "agents", "llms",
    "tools", "tool_dependencies", "longterm_memory", "conversation_type", "conversation_store",
    "conversation", "name", "description",
}  # fmt: skip
_AGENT = {
    "name", "type", "llm", "prompt", "tools", "topics", "locked_fields", "max_trials",
    "max_reasoning_steps", "init_prompt_arguments_with_longterm_memory", "location",
    "invoke_on_final", "branch_conversation_name", "join_conversations_name", "final_properties",
    "finalizer_name", "supervisor", "can_finalize_name", "max_dispatches", "rules",
    "fallback_to_llm", "render_prompt", "agent_descriptions", "code_filename",
    "human",  # ours: a person answers (docs/CONDUCTOR.md, "A person in the loop")
}  # fmt: skip
_PROMPT = {
    "type", "location", "prompt_argument_class", "user_prompt_argument_class",
    "system_prompt_argument_class", "json_formatting_template", "is_valid_name", "is_final_name",
    "can_finalize_name", "fail_name", "finalize_name", "longterm_memory_class",
    "heuristic_sequence_name", "agent_description_filename", "code_filename",
    "user_template_filename", "system_template_filename",
}  # fmt: skip


def packaged(name: str) -> str:
    """One of Diskurs' packaged templates (``diskurs/assets``)."""
    return importlib.resources.files("diskurs.assets").joinpath(name).read_text()


_FUNCTIONS = {
    "can_finalize_name": "can_finalize",
    "finalize_name": "finalize",
    "fail_name": "fail",
    "longterm_memory_class": "",
}
"""A conductor prompt's functions and memory class, with Diskurs' default names."""
_TARGETS = {
    "finalizer_name": "finalizerName",
    "supervisor": "supervisor",
    "can_finalize_name": "canFinalizeName",
}
"""A conductor's agents to finalize with (the config's key, as written)."""


_DEFAULT_NAMES = {
    "is_valid_name": "is_valid",
    "is_final_name": "is_final",
    "can_finalize_name": "can_finalize",
    "finalize_name": "finalize",
    "fail_name": "fail",
}
"""A prompt's functions, by Diskurs' default names."""
_RULE = {"name", "description", "location", "condition_name", "condition_module", "target_agent"}
_TOOL = {"name", "function_name", "module_name", "module_path", "configs", "dependencies"}
_DEPENDENCY = {"name", "module_name", "module_path", "class_name", "parameters"}


def camel(key: str) -> str:
    """A snake_case key as a Diskurs config spells it (``is_valid_name``: ``isValidName``)."""
    first, *rest = key.split("_")
    return first + "".join(part.title() for part in rest)


def _hint(name: str, known: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, else ''."""
    close = difflib.get_close_matches(name, sorted(str(k) for k in known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class DiskursConfigError(ValueError):
    """A Diskurs project that Diskurs itself could not run; the message names file and key."""


def snake(name: str) -> str:
    """Diskurs' key conversion (camelCase to snake_case), applied to every key as Diskurs does."""
    first = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z0-9])([A-Z])", r"\1_\2", first).lower()


def _snake_keys(data: Any) -> Any:
    if isinstance(data, dict):
        return {snake(str(k)): _snake_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_snake_keys(item) for item in data]
    return data


_ENV = re.compile(r"\$\{([^}:]+)(?::([^}]+))?\}")


def _resolve_env(data: Any, unset: list[str]) -> Any:
    """``${VAR}`` / ``${VAR:default}`` replaced as Diskurs does (an unset variable without a
    default becomes ''); the unset ones are collected for a warning."""
    if isinstance(data, dict):
        return {k: _resolve_env(v, unset) for k, v in data.items()}
    if isinstance(data, list):
        return [_resolve_env(item, unset) for item in data]
    if not isinstance(data, str):
        return data

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2) or ""
        if name not in os.environ and not default:
            unset.append(name)
        return os.environ.get(name, default)

    return _ENV.sub(value, data)


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Each key's line in the YAML text (1-based), by its path of snake_case keys and list
    indexes: ``("agents", 1, "prompt", "is_valid_name")``; a list item's is its first line."""
    lines: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                inner = (*path, snake(str(key.value)))
                lines[inner] = key.start_mark.line + 1
                walk(value, inner)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[(*path, i)] = item.start_mark.line + 1
                walk(item, (*path, i))

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return lines
    if root is not None:
        walk(root, ())
    return lines


_PART = re.compile(r"^(?P<key>[^\[\s(]+)?(?:\[(?P<index>\d+)\])?(?: ?\((?P<name>[^)]*)\))?$")


@dataclasses.dataclass
class Project:
    """What the reader found: the workflow's and agents' document data, and the warnings."""

    folder: Path
    config_path: Path
    workflow: dict[str, Any]
    agents: list[dict[str, Any]]
    warnings: list[str]


def find_config(folder: Path, config: Path | None = None) -> Path:
    if config is not None:
        return config if config.is_absolute() else folder / config
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise DiskursConfigError(f"{folder}: no config.yml (pass --config FILE)")


def is_diskurs_config(raw: Any) -> bool:
    """Diskurs' configuration (``first_contact`` / ``firstContact``, or typed agents), not ours."""
    if not isinstance(raw, dict):
        return False
    keys = {snake(str(k)) for k in raw}
    agents = raw.get("agents") or []
    typed = any(isinstance(a, dict) and "type" in a for a in agents)
    return "first_contact" in keys or typed


class _Reader:
    def __init__(
        self,
        folder: Path,
        path: Path,
        repo_root: Path,
        data: dict[str, Any] | None = None,
        lines: dict[tuple[Any, ...], int] | None = None,
    ) -> None:
        self.folder = folder.resolve()
        self.path = path
        self.repo_root = repo_root
        self.data = data or {}
        self.lines = lines or {}
        self.warnings: list[str] = []

    # --- helpers ----------------------------------------------------------------------------

    def line(self, where: str) -> int:
        """The config line of a message's key (``agents[1] (first_agent).prompt.isValidName``,
        ``agents (boss).rules[0]``): the deepest part of its path the file has; 0 if none."""
        path: tuple[Any, ...] = ()
        found = 0
        for part in where.split("."):
            match = _PART.match(part)
            if match is None:
                break
            key, index, name = match.group("key"), match.group("index"), match.group("name")
            if key is None:
                continue  # "(top level)"
            path = (*path, snake(key))
            if index is None and name is not None and path == ("agents",):
                names = [
                    a.get("name") if isinstance(a, dict) else None
                    for a in self.data.get("agents") or []
                ]
                index = str(names.index(name)) if name in names else None
            if index is not None:
                path = (*path, int(index))
            found = self.lines.get(path, found)
        return found

    def at(self, where: str, name: str) -> str:
        line = self.line(where)
        return f"{name}:{line}" if line else name

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{self.at(where, self.path.name)}: {where}: {message}")

    def fail(self, where: str, message: str) -> DiskursConfigError:
        return DiskursConfigError(f"{self.at(where, str(self.path))}: {where}: {message}")

    def unknown_keys(self, data: dict[str, Any], known: set[str], where: str) -> None:
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean {camel(close[0])!r}?)" if close else ""
                raise self.fail(
                    f"{where}.{camel(key)}", f"unknown key (Diskurs would ignore it){hint}"
                )

    def where(self, location: str | None, key: str) -> Path:
        if not location:
            raise self.fail(key, "missing")
        found = Path(location)
        return found if found.is_absolute() else (self.folder / found).resolve()

    def shown(self, path: Path) -> str:
        """A path in a message: relative to the project's folder."""
        try:
            return str(path.resolve().relative_to(self.folder))
        except ValueError:
            return str(path)

    def stored(self, path: Path) -> str:
        """A path as the documents keep it: relative to the repository when inside it (the
        deployed source), else absolute (a folder of ``DLAB_WORKFLOW_DIRS``)."""
        try:
            return str(path.resolve().relative_to(self.repo_root))
        except ValueError:
            return str(path.resolve())

    def read_text(self, path: Path, key: str) -> str:
        try:
            return path.read_text()
        except OSError as error:
            raise self.fail(key, f"{path}: {error.strerror}") from None

    def module(self, path: Path, key: str) -> Any:
        try:
            return load_file(path)
        except Exception as error:  # the project's own code, as it loads: named, not raised
            reason = f"cannot import {self.shown(path)}: {type(error).__name__}: {error}"
            raise self.fail(key, reason) from None

    # --- the parts --------------------------------------------------------------------------

    def models(self, llms: list[Any]) -> dict[str, dict[str, Any]]:
        """``llms:`` as model settings by name: ``type`` is one of our providers
        (``scripted`` for the offline model)."""
        found: dict[str, dict[str, Any]] = {}
        for i, llm in enumerate(llms or []):
            where = f"llms[{i}]"
            if not isinstance(llm, dict) or "name" not in llm:
                raise self.fail(where, "needs a name and a type")
            kind = str(llm.get("type", "")).lower()
            if kind not in LLM_TYPES:
                names = sorted(LLM_TYPES)
                raise self.fail(
                    f"{where}.type", f"{llm.get('type')!r} is not one of our providers {names}"
                )
            model_name = llm.get("model_name") or ("scripted" if kind == "scripted" else "")
            found[str(llm["name"])] = {
                "apiType": LLM_TYPES[kind].value,
                "modelName": model_name,
            }
            extra = sorted(set(llm) - {"name", "type", "model_name", "model_max_tokens"})
            if extra:
                self.warn(where, f"{extra} not used: providers are set by the deployment")
        return found

    def argument_class(
        self, module: Any, names: list[str | None], where: str, *, conductor: bool
    ) -> str:
        """The prompt argument class: the first configured name the file defines; else (as
        the names configured are absent) the file's only class of its own, with a warning;
        a conductor falls back to Diskurs' default conductor class ('')."""
        wanted = [n for n in names if n]
        for name in wanted:
            if arguments.is_argument_class(getattr(module, name, None)):
                return name
        own = [
            n
            for n, v in vars(module).items()
            if arguments.is_argument_class(v) and v.__module__ == module.__name__
        ]
        missing = (
            f"{wanted} not in {self.shown(Path(str(module.__file__)))}"
            if wanted
            else "no class named"
        )
        if conductor:
            if wanted:
                self.warn(where, f"{missing}: Diskurs' default conductor prompt argument is used")
            return ""
        if len(own) == 1:
            line = definition_line(getattr(module, own[0]))
            self.warn(
                where,
                f"{missing}; using {own[0]} (line {line}), the file's only prompt argument class",
            )
            return own[0]
        raise self.fail(where, f"{missing}, and the file defines {own or 'no prompt argument'}")

    def templates(self, location: Path, prompt: dict[str, Any], kind: str) -> tuple[str, str]:
        system = location / prompt.get("system_template_filename", "system_template.jinja2")
        user = location / prompt.get("user_template_filename", "user_template.jinja2")
        if kind == "conductor_prompt":
            return self._or_packaged(system, "conductor_system_template.jinja2"), (
                self._or_packaged(user, "conductor_user_template.jinja2")
            )
        if kind == "heuristic_prompt":
            return "", user.read_text() if user.is_file() else ""
        if kind == "llm_compiler_prompt" and not user.is_file():
            return self._or_packaged(system, LLM_COMPILER_TEMPLATES[0]), (
                self._or_packaged(user, LLM_COMPILER_TEMPLATES[1])
            )
        return self.read_text(system, "prompt.location"), self.read_text(user, "prompt.location")

    @staticmethod
    def _or_packaged(path: Path, name: str) -> str:
        """A conductor's template, or Diskurs' own packaged default when the folder has none."""
        return path.read_text() if path.is_file() else packaged(name)

    def agent(self, i: int, entry: dict[str, Any], models: dict[str, dict[str, Any]]) -> dict:
        where = f"agents[{i}]"
        if not isinstance(entry, dict) or "name" not in entry:
            raise self.fail(where, "needs a name")
        where = f"agents[{i}] ({entry['name']})"
        kind = entry.get("type", "")
        if kind not in AgentType.__members__.values():
            types = [t.value for t in AgentType]
            raise self.fail(f"{where}.type", f"{kind!r} is not one of Diskurs' types {types}")
        self.unknown_keys(entry, _AGENT, where)
        prompt = entry.get("prompt") or {}
        self.unknown_keys(prompt, _PROMPT, f"{where}.prompt")
        prompt_type = prompt.get("type", "llm_compiler_prompt" if kind == "llm_compiler" else "")
        if prompt_type not in PROMPT_TYPES:
            raise self.fail(
                f"{where}.prompt.type", f"{prompt_type!r} not in {sorted(PROMPT_TYPES)}"
            )
        doc: dict[str, Any] = {"name": entry["name"], "type": kind}
        if prompt.get("location"):
            self.prompt_parts(doc, prompt, prompt_type, where, conductor=kind == "conductor")
        elif kind == "llm_compiler":  # Diskurs' own planning prompt
            doc.update(
                systemPrompt=packaged(LLM_COMPILER_TEMPLATES[0]),
                userPrompt=packaged(LLM_COMPILER_TEMPLATES[1]),
                userPromptArgument="",
                systemPromptArgument="",
            )
        else:
            raise self.fail(f"{where}.prompt.location", "missing")
        self.agent_settings(doc, entry, models, where)
        return doc

    def prompt_parts(
        self, doc: dict[str, Any], prompt: dict[str, Any], kind: str, where: str, *, conductor: bool
    ) -> None:
        location = self.where(prompt.get("location"), f"{where}.prompt.location")
        code = location / prompt.get("code_filename", "prompt.py")
        module = self.module(code, f"{where}.prompt.location") if code.is_file() else None
        if module is None and not conductor:
            raise self.fail(f"{where}.prompt.location", f"no {code.name} in {location}")
        description = location / prompt.get("agent_description_filename", "agent_description.txt")
        if not conductor and description != location and not description.is_file():
            raise self.fail(
                f"{where}.prompt.location",
                f"no {description.name} in {self.shown(location)} (Diskurs opens it, and raises)",
            )
        self.named_functions(module, prompt, f"{where}.prompt", code)
        system, user = self.templates(location, prompt, kind)
        user_names = [prompt.get("prompt_argument_class"), prompt.get("user_prompt_argument_class")]
        doc.update(
            description=description.read_text().strip() if description.is_file() else "",
            systemPrompt=system,
            userPrompt=user,
            promptLocation=self.stored(location),
            codeFilename=code.name,
            userPromptArgument=(
                self.argument_class(module, user_names, f"{where}.prompt", conductor=conductor)
                if module is not None
                else ""
            ),
            systemPromptArgument=self.system_class(module, prompt),
            isValidName=prompt.get("is_valid_name") or "is_valid",
            isFinalName=prompt.get("is_final_name") or "is_final",
        )
        self.undeclared(doc, module, where)
        if kind == "heuristic_prompt":
            doc["heuristicSequenceName"] = prompt.get(
                "heuristic_sequence_name", "heuristic_sequence"
            )
            name = doc["heuristicSequenceName"]
            if not callable(getattr(module, name, None)):
                raise self.fail(f"{where}.prompt.heuristicSequenceName", f"no {name} in {code}")

    def named_functions(self, module: Any, prompt: dict[str, Any], where: str, code: Path) -> None:
        """A function the prompt names, other than by Diskurs' default name, is in the file:
        Diskurs would fall back to its default in silence (a misspelt ``is_valid`` never
        called); a default name the file lacks is Diskurs' default, as there."""
        defined = [n for n, v in vars(module).items() if callable(v)] if module else []
        for key, default in _DEFAULT_NAMES.items():
            name = prompt.get(key)
            if name and name != default and not callable(getattr(module, str(name), None)):
                raise self.fail(
                    f"{where}.{camel(key)}",
                    f"no function {name!r} in {self.shown(code)}" + _hint(str(name), defined),
                )

    def undeclared(self, doc: dict[str, Any], module: Any, where: str) -> None:
        """A warning for each template variable that is no field of the prompt argument:
        Diskurs renders it empty, in silence (``forum_setup``'s ``{{ content }}``)."""
        cls = getattr(module, doc["userPromptArgument"], None) or DefaultConductorPromptArgument
        known = {*arguments.field_names(cls), "query"}
        for key in ("systemPrompt", "userPrompt"):
            try:
                used = meta.find_undeclared_variables(_TEMPLATES.parse(doc[key]))
            except TemplateSyntaxError:
                continue  # refused with its line by the checks
            if used - known:
                self.warn(
                    f"{where}.prompt.location",
                    f"{key} uses {sorted(used - known)}, no fields of {cls.__name__}: "
                    "Diskurs renders them empty, and so does this backend",
                )

    @staticmethod
    def system_class(module: Any, prompt: dict[str, Any]) -> str:
        """A separate system class only when the file has it (older Diskurs); else '' : the
        system template is rendered with the prompt argument, as Diskurs does now."""
        name = prompt.get("system_prompt_argument_class")
        if module is not None and name and arguments.is_argument_class(getattr(module, name, None)):
            return str(name)
        return ""

    def agent_settings(
        self, doc: dict[str, Any], entry: dict[str, Any], models: dict, where: str
    ) -> None:
        if entry.get("llm"):
            if entry["llm"] not in models:
                raise self.fail(
                    f"{where}.llm", f"{entry['llm']!r} is not one of llms {sorted(models)}"
                )
            doc["modelSettings"] = models[entry["llm"]]
        doc["maxAttempts"] = int(entry.get("max_trials") or DEFAULT_MAX_TRIALS)
        doc["maxReasoningSteps"] = int(entry.get("max_reasoning_steps") or DEFAULT_REASONING_STEPS)
        if entry.get("type") != "conductor":
            doc["topics"] = list(entry.get("topics") or [])
        doc["initFromMemory"] = entry.get("init_prompt_arguments_with_longterm_memory", True)
        doc["lockedFields"] = entry.get("locked_fields") or {}
        doc["tools"] = list(entry.get("tools") or [])
        if entry.get("human") is not None:
            doc["human"] = entry["human"]
        if entry.get("final_properties") is not None:
            doc["finalProperties"] = list(entry["final_properties"])
        if "render_prompt" in entry:
            doc["renderPrompt"] = bool(entry["render_prompt"])
        if entry.get("type") == "parallel_multistep":
            self.parallel(doc, entry, where)

    def parallel(self, doc: dict[str, Any], entry: dict[str, Any], where: str) -> None:
        """A ``parallel_multistep`` agent's ``parallelize.py`` and its functions' names."""
        location = self.where(entry.get("location"), f"{where}.location")
        doc["parallelLocation"] = self.stored(location)
        doc["invokeOnFinal"] = bool(entry.get("invoke_on_final", True))
        code = location / "parallelize.py"
        module = self.module(code, f"{where}.location")
        for key, default in (
            ("branch_conversation_name", "branch_conversation"),
            ("join_conversations_name", "join_conversations"),
        ):
            name = str(entry.get(key) or default)
            if not callable(getattr(module, name, None)):
                defined = [n for n, v in vars(module).items() if callable(v)]
                raise self.fail(
                    f"{where}.{camel(key)}",
                    f"no function {name!r} in {self.shown(code)}" + _hint(name, defined),
                )
            if entry.get(key):
                doc[camel(key)] = name

    def conductor(self, entry: dict[str, Any], agent: dict[str, Any], names: list[str]) -> dict:
        """The workflow's ``conductor`` map from the conductor agent's entry."""
        where = f"agents ({entry['name']})"
        prompt = entry.get("prompt") or {}
        functions = {key: prompt.get(key) or default for key, default in _FUNCTIONS.items()}
        targets = {key: entry.get(key) or "" for key in _TARGETS}
        self.missing_targets(where, targets, names)
        data: dict[str, Any] = {
            "name": entry["name"],
            "topics": self.topics(entry, names, where),
            "finalizer_name": targets["finalizer_name"],
            "supervisor": targets["supervisor"],
            "can_finalize_agent": targets["can_finalize_name"],
            "max_dispatches": int(entry.get("max_dispatches") or DEFAULT_MAX_DISPATCHES),
            "max_attempts": agent.get("maxAttempts", DEFAULT_MAX_TRIALS),
            "fallback_to_llm": bool(entry.get("fallback_to_llm", True)),
            "route_functions": [
                self.rule(i, r, where, names) for i, r in enumerate(entry.get("rules") or [])
            ],
            **functions,
        }
        conductor = ConductorConfig.model_validate(data)
        return conductor.to_firestore()

    def topics(self, entry: dict[str, Any], names: list[str], where: str) -> list[str]:
        topics = list(entry.get("topics") or [])
        for topic in topics:
            if topic not in names:
                raise self.fail(
                    f"{where}.topics", f"{topic!r} is not an agent {names}" + _hint(topic, names)
                )
        return topics

    def missing_targets(self, where: str, targets: dict[str, str], names: list[str]) -> None:
        for key, target in targets.items():
            if target and target not in names:
                self.warn(
                    f"{where}.{_TARGETS[key]}",
                    f"{target!r} is not an agent of this project; Diskurs sends the conversation "
                    "there and it ends without a final result: so it does here",
                )

    def rule(self, i: int, rule: Any, where: str, names: list[str]) -> RouteFunction:
        key = f"{where}.rules[{i}]"
        if not isinstance(rule, dict):
            raise self.fail(key, "must be a map")
        self.unknown_keys(rule, _RULE, key)
        location = self.where(rule.get("location"), f"{key}.location")
        module = self.module(location / "rules.py", f"{key}.location")
        name = str(rule.get("condition_name") or "")
        if not name:
            raise self.fail(key, "needs conditionName (a function of rules.py)")
        if not callable(getattr(module, name, None)):
            defined = [n for n, v in vars(module).items() if callable(v)]
            raise self.fail(
                f"{key}.conditionName",
                f"no function {name!r} in {self.shown(location / 'rules.py')}"
                + _hint(name, defined),
            )
        target = str(rule.get("target_agent", ""))
        if target not in names:
            raise self.fail(
                f"{key}.targetAgent", f"{target!r} is not an agent {names}" + _hint(target, names)
            )
        return RouteFunction(
            name=str(rule.get("name", name)),
            description=str(rule.get("description", "")),
            location=self.stored(location),
            condition_name=name,
            target_agent=target,
        )

    def custom_modules(self, modules: Any) -> dict[str, Path]:
        """``customModules: [{name, location}]`` by name, each file imported now, as Diskurs
        pre-loads them (a file that is missing or raises is refused here)."""
        if not isinstance(modules, list):
            raise self.fail("customModules", "must be a list of {name, location}")
        found: dict[str, Path] = {}
        for i, module in enumerate(modules):
            key = f"customModules[{i}]"
            if not isinstance(module, dict) or not module.get("name") or not module.get("location"):
                raise self.fail(key, "needs name and location")
            self.unknown_keys(module, {"name", "location"}, key)
            path = self.where(str(module["location"]), f"{key}.location")
            self.module(path, f"{key}.location")
            found[str(module["name"])] = path
        return found

    def module_file(self, entry: dict[str, Any], key: str, modules: dict[str, Path]) -> Path:
        """A tool's or a dependency's file: its ``moduleName`` among ``customModules``, as
        Diskurs finds it, or (ours) its ``modulePath``."""
        name, path = entry.get("module_name"), entry.get("module_path")
        if name:
            if name not in modules:
                raise self.fail(
                    f"{key}.moduleName",
                    f"{name!r} is not the name of one of customModules {sorted(modules)}"
                    + _hint(str(name), modules),
                )
            return modules[str(name)]
        if path:
            return self.where(str(path), f"{key}.modulePath")
        raise self.fail(key, "needs moduleName (one of customModules) or modulePath")

    def tools(self, tools: Any, modules: dict[str, Path], dependencies: dict[str, Any]) -> list:
        """The workflow's ``tools``, each function found in its file now: the function itself,
        or its ``create_<functionName>`` factory when the entry has configs or dependencies
        (Diskurs' ``load_tools``), each dependency one of ``toolDependencies``."""
        found = []
        for i, tool in enumerate(tools or []):
            key = f"tools[{i}]"
            if not isinstance(tool, dict) or not tool.get("name") or not tool.get("function_name"):
                raise self.fail(key, "needs name and functionName")
            self.unknown_keys(tool, _TOOL, key)
            path = self.module_file(tool, key, modules)
            module = self.module(path, f"{key}.moduleName")
            made = tool.get("configs") is not None or bool(tool.get("dependencies"))
            wanted = f"create_{tool['function_name']}" if made else tool["function_name"]
            if not callable(getattr(module, wanted, None)):
                defined = [
                    n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                ]
                raise self.fail(
                    f"{key}.functionName",
                    f"no function {wanted!r} in {self.shown(path)}" + _hint(wanted, defined),
                )
            for name in tool.get("dependencies") or []:
                if name not in dependencies:
                    raise self.fail(
                        f"{key}.dependencies",
                        f"{name!r} is not one of toolDependencies {sorted(dependencies)}"
                        + _hint(str(name), dependencies),
                    )
            entry = ToolEntry(
                name=tool["name"],
                function_name=tool["function_name"],
                module_path=self.stored(path),
                module_name=tool.get("module_name", ""),
                configs=tool.get("configs"),
                dependencies=tool.get("dependencies"),
            )
            found.append(entry.to_firestore())
        return found

    def tool_dependencies(self, raw: Any, modules: dict[str, Path]) -> dict[str, Any]:
        """``toolDependencies`` by name. Diskurs 0.0.79's list of ``{name, moduleName,
        className, parameters}`` becomes ``{className, modulePath, parameters}`` with the class
        found now (it must have ``create``); the older map is kept as written."""
        if isinstance(raw, dict):
            return raw
        if not isinstance(raw, list):
            raise self.fail("toolDependencies", "must be a list of {name, moduleName, className}")
        found: dict[str, Any] = {}
        for i, dependency in enumerate(raw):
            key = f"toolDependencies[{i}]"
            if not isinstance(dependency, dict) or not dependency.get("name"):
                raise self.fail(key, "needs name, moduleName and className")
            self.unknown_keys(dependency, _DEPENDENCY, key)
            path = self.module_file(dependency, key, modules)
            module = self.module(path, f"{key}.moduleName")
            class_name = str(dependency.get("class_name") or "")
            if not callable(getattr(getattr(module, class_name, None), "create", None)):
                classes = [n for n, v in vars(module).items() if isinstance(v, type)]
                raise self.fail(
                    f"{key}.className",
                    f"no class {class_name!r} with create() in {self.shown(path)}"
                    + _hint(class_name, classes),
                )
            found[str(dependency["name"])] = {
                "className": class_name,
                "modulePath": self.stored(path),
                "parameters": dependency.get("parameters") or {},
            }
        return found

    def agent_tools(self, docs: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Each agent's ``tools`` name one of the workflow's by its name or its function's."""
        known = [t["name"] for t in tools] + [t["functionName"] for t in tools]
        for i, doc in enumerate(docs):
            for name in doc.get("tools", []):
                if name not in known:
                    raise self.fail(
                        f"agents[{i}] ({doc['name']}).tools",
                        f"{name!r} is no tool of this project {sorted(set(known))}"
                        + _hint(name, known),
                    )

    def memory_class(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Where the ``LongtermMemory`` class is: the top-level ``longtermMemory`` (a class in a
        file, or one the project's files define), else the conductor's ``longtermMemoryClass``."""
        memory = raw.get("longterm_memory")
        if not memory:
            return {}
        if not isinstance(memory, dict) or not memory.get("type"):
            raise self.fail("longtermMemory", "needs a type (the class)")
        self.unknown_keys(memory, {"type", "location"}, "longtermMemory")
        if memory.get("location"):
            path = self.where(memory["location"], "longtermMemory.location")
            module = self.module(path, "longtermMemory.location")
            if not arguments.is_memory_class(getattr(module, memory["type"], None)):
                raise self.fail(
                    "longtermMemory.type", f"no LongtermMemory {memory['type']} in {path}"
                )
            return {
                "longtermMemoryClass": memory["type"],
                "longtermMemoryLocation": self.stored(path),
            }
        return {"longtermMemoryClass": memory["type"]}

    def read(self, raw: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        self.unknown_keys(raw, _TOP, "(top level)")
        models = self.models(raw.get("llms") or [])
        entries = raw.get("agents") or []
        if not entries:
            raise self.fail("agents", "no agents")
        docs = [self.agent(i, e, models) for i, e in enumerate(entries)]
        first = str(raw.get("first_contact") or "")
        self.check_names(docs, first)
        modules = self.custom_modules(raw.get("custom_modules") or [])
        dependencies = self.tool_dependencies(raw.get("tool_dependencies") or {}, modules)
        names = [d["name"] for d in docs if d["type"] != "conductor"]
        workflow: dict[str, Any] = {
            "format": WorkflowFormat.DISKURS.value,
            "agents": names,
            "tools": self.tools(raw.get("tools") or [], modules, dependencies),
            "toolDependencies": dependencies,
            "conductor": {"maxDispatches": DEFAULT_MAX_DISPATCHES},
        }
        self.agent_tools(docs, workflow["tools"])
        self.with_conductor(workflow, entries, docs, first)
        workflow["conductor"].update(self.memory_class(raw))
        if not models:
            self.warn("llms", "no llms: every agent runs on the scripted model")
        return workflow, docs

    def with_conductor(
        self, workflow: dict[str, Any], entries: list[Any], docs: list[dict[str, Any]], first: str
    ) -> None:
        """The conductors' maps from their entries, if the project has any: the first contact
        if it is one (else the first), whose model is the workflow's, is ``conductor``; the
        others, nested, ``conductors``. The first contact when it is not that conductor."""
        pairs = [(e, d) for e, d in zip(entries, docs, strict=True) if d["type"] == "conductor"]
        pairs.sort(key=lambda pair: pair[0]["name"] != first)  # stable: else the first listed
        conductor = pairs[0][0]["name"] if pairs else None
        every = [*workflow["agents"], *(e["name"] for e, _ in pairs)]
        maps = [self.conductor(e, d, [n for n in every if n != e["name"]]) for e, d in pairs]
        if pairs:
            workflow["conductor"] = maps[0]
            if pairs[0][1].get("modelSettings"):
                workflow["modelSettings"] = pairs[0][1]["modelSettings"]
        if len(pairs) > 1:
            workflow["conductors"] = maps[1:]
        if first != conductor:
            workflow["firstContact"] = first

    def check_names(self, docs: list[dict[str, Any]], first: str) -> None:
        """``first_contact`` and every topic name an agent."""
        every = [d["name"] for d in docs]
        if first not in every:
            raise self.fail(
                "first_contact", f"{first!r} is not an agent {every}" + _hint(first, every)
            )
        for doc in docs:
            for topic in doc.get("topics", []):
                if topic not in every:
                    raise self.fail(
                        f"agents ({doc['name']}).topics",
                        f"{topic!r} is not an agent" + _hint(topic, every),
                    )


def read_project(
    folder: Path, config: Path | None, repo_root: Path, raw: dict[str, Any] | None = None
) -> Project:
    """The project's documents' data (not yet checked against the models) and warnings."""
    path = find_config(folder, config)
    try:
        text = path.read_text()
        if raw is None:
            raw = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError) as error:
        raise DiskursConfigError(f"{path}: {error}") from None
    if not isinstance(raw, dict):
        raise DiskursConfigError(f"{path}: not a mapping")
    unset: list[str] = []
    data = _snake_keys(_resolve_env(raw, unset))
    reader = _Reader(folder, path, repo_root, data, key_lines(text))
    for name in sorted(set(unset)):
        reader.warn(f"${{{name}}}", "not set and no default: Diskurs reads it as ''")
    workflow, agents = reader.read(data)
    workflow["warnings"] = list(reader.warnings)
    return Project(folder, path, workflow, agents, reader.warnings)
