"""The deployment plan: every step, derived from the function registry, as data.

Built without touching the network, so ``--dry-run`` prints exactly what a real run executes and
tests can check every command.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from functions.registry import REGISTRY, FunctionSpec, HttpTrigger

RUNTIME = "python312"
DATABASE = "(default)"
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
"""Set on every function: the Python 3.12 runtime does not set it, and the functions name their
Pub/Sub topics with it (functions/pubsub.py)."""

BASE_APIS = (
    "cloudfunctions.googleapis.com",
    "run.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "eventarc.googleapis.com",
    "pubsub.googleapis.com",
    "firestore.googleapis.com",
    "firebaserules.googleapis.com",
)
SCHEDULER_API = "cloudscheduler.googleapis.com"


RulesMode = Literal["ask", "skip", "merge", "replace"]


class PlanError(ValueError):
    """The registry or the index file holds something this tool cannot deploy."""


@dataclasses.dataclass(frozen=True)
class Options:
    project: str
    region: str
    source_dir: Path
    firestore_location: str
    """Where the Firestore database lives (nam5, eur3, us-central1, ...): Eventarc triggers for
    Firestore must be created there."""
    rules: Path
    indexes: Path
    database: str = DATABASE
    rules_mode: RulesMode = "ask"
    """What to do with the project's current rules (tools/deploy/rules.py)."""
    service_account: str | None = None
    enable_apis: bool = True


@dataclasses.dataclass(frozen=True)
class Assemble:
    """Write the deployable source tree (functions/, shared/, main.py, requirements.txt)."""

    source_dir: Path

    def describe(self) -> str:
        return f"# assemble the deployable source into {self.source_dir}"


@dataclasses.dataclass(frozen=True)
class Gcloud:
    """One gcloud command; ``exists_ok`` makes "already exists" a success (re-deploys), and
    ``if_exists`` is run instead when the resource exists (an update)."""

    argv: tuple[str, ...]
    exists_ok: bool = False
    if_exists: tuple[str, ...] | None = None

    def describe(self) -> str:
        line = shlex.join(self.argv)
        if self.if_exists:
            line += f"\n    # if it exists: {shlex.join(self.if_exists)}"
        return line

    @property
    def function_name(self) -> str | None:
        if self.argv[1:3] == ("functions", "deploy"):
            return self.argv[3]
        return None


@dataclasses.dataclass(frozen=True)
class ReleaseRules:
    """Publish firestore.rules through the Firebase Rules API (gcloud has no command for it):
    create a ruleset, then point the database's release at it."""

    project: str
    rules: Path
    database: str = DATABASE
    mode: RulesMode = "ask"
    """What to do with the project's current rules: see tools/deploy/rules.py."""

    @property
    def release_id(self) -> str:
        return (
            "cloud.firestore" if self.database == DATABASE else f"cloud.firestore/{self.database}"
        )

    def describe(self) -> str:
        base = "https://firebaserules.googleapis.com/v1"
        release = f"projects/{self.project}/releases/{self.release_id}"
        return (
            f"# security rules {self.rules} -> Firebase Rules API (--rules={self.mode}: "
            f"{RULES_MODES[self.mode]})\n"
            f"GET {base}/{release} and its ruleset: the rules in force, diffed with ours\n"
            f"POST {base}/projects/{self.project}/rulesets"
            ' {"source": {"files": [{"name": "firestore.rules", "content": <file>}]}}\n'
            f"PATCH {base}/{release}"
            f' {{"release": {{"name": "{release}", "rulesetName": <new ruleset>}}}}'
            " (POST .../releases when there is none yet)"
        )


@dataclasses.dataclass(frozen=True)
class FieldIndexes:
    """A field's single-field indexes (a fieldOverrides entry), set with the Firestore Admin
    API: gcloud's ``indexes fields update`` cannot give an index collection-group scope, which
    collection-group queries on one field need (Firestore only keeps collection-scope ones).
    An entry with ``"ttl": true`` also makes the field its collection group's TTL field, in the
    same request (as the Firebase CLI sends it; gcloud's ``fields ttls update --enable-ttl``
    sends the same ``ttlConfig``)."""

    project: str
    database: str
    collection_group: str
    field_path: str
    indexes: tuple[tuple[str, str, str], ...]
    """(queryScope, "order" | "arrayConfig", value)"""
    ttl: bool = False
    """Firestore deletes the group's documents once this timestamp field's time has passed."""

    @property
    def path(self) -> str:
        return (
            f"projects/{self.project}/databases/{self.database}"
            f"/collectionGroups/{self.collection_group}/fields/{self.field_path}"
        )

    def body(self) -> dict[str, Any]:
        # The shape gcloud's `indexes fields update` sends, plus the query scope it cannot set.
        indexes = [
            {"queryScope": scope, "fields": [{kind: value}]} for scope, kind, value in self.indexes
        ]
        body: dict[str, Any] = {"name": self.path, "indexConfig": {"indexes": indexes}}
        if self.ttl:
            body["ttlConfig"] = {}
        return body

    @property
    def update_mask(self) -> str:
        return "indexConfig,ttlConfig" if self.ttl else "indexConfig"

    def describe(self) -> str:
        body = {k: v for k, v in self.body().items() if k != "name"}
        return (
            f"PATCH https://firestore.googleapis.com/v1/{self.path}?updateMask={self.update_mask}"
            f" {json.dumps(body)}"
        )


RULES_MODES = {
    "ask": "replace them only if this tool wrote them, after asking; else stop",
    "skip": "leave the project's rules as they are",
    "merge": "release ours plus their blocks for collections ours does not cover",
    "replace": "release ours as they are",
}

Step = Assemble | Gcloud | ReleaseRules | FieldIndexes


# --- triggers ---------------------------------------------------------------------------------


def _schedule(spec: FunctionSpec) -> str | None:
    """A scheduled trigger's cron, if the registry gives this function one."""
    schedule = getattr(spec.trigger, "schedule", None)
    return schedule if isinstance(schedule, str) and schedule else None


def topic_of(spec: FunctionSpec) -> str | None:
    """The Pub/Sub topic a Pub/Sub or scheduled function listens on."""
    topic = getattr(spec.trigger, "topic", None)
    if isinstance(topic, str) and topic:
        return topic
    if _schedule(spec):
        return f"{_kebab(spec.name)}-schedule"
    return None


def _kebab(name: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name).lstrip("-")


def topics(registry: Iterable[FunctionSpec]) -> list[str]:
    return sorted({t for spec in registry if (t := topic_of(spec))})


def _trigger_flags(spec: FunctionSpec, options: Options) -> list[str]:
    trigger: Any = spec.trigger
    if isinstance(trigger, HttpTrigger):
        # public: the function checks its callers itself (the REST API's keys), so Cloud Run
        # lets everyone invoke it; otherwise only callers with the run.invoker role
        access = "--allow-unauthenticated" if trigger.public else "--no-allow-unauthenticated"
        return ["--trigger-http", access]
    document = getattr(trigger, "document", None)
    if isinstance(document, str):
        return [
            f"--trigger-event-filters=type={trigger.event_type}",
            f"--trigger-event-filters=database={options.database}",
            f"--trigger-event-filters-path-pattern=document={document}",
            f"--trigger-location={options.firestore_location}",
        ]
    topic = topic_of(spec)
    if topic:
        return [f"--trigger-topic={topic}"]
    raise PlanError(f"{spec.name}: cannot deploy a trigger of type {type(trigger).__name__}")


# --- commands ---------------------------------------------------------------------------------


def deploy_function(spec: FunctionSpec, options: Options) -> Gcloud:
    argv = [
        "gcloud",
        "functions",
        "deploy",
        spec.name,
        "--gen2",
        f"--project={options.project}",
        f"--region={options.region}",
        f"--runtime={RUNTIME}",
        f"--source={options.source_dir}",
        f"--entry-point={spec.name}",
        *_trigger_flags(spec, options),
        f"--timeout={spec.timeout_s}s",
        f"--memory={spec.memory}",
    ]
    http = isinstance(spec.trigger, HttpTrigger)
    if not http:  # an HTTP caller retries itself; gcloud takes --retry for events only
        argv.append("--retry" if spec.retry else "--no-retry")
    argv += [
        f"--update-env-vars={PROJECT_ENV}={options.project}",
    ]
    if spec.max_instances is None:
        argv.append("--clear-max-instances")  # the registry is the truth, also on re-deploys
    else:
        argv.append(f"--max-instances={spec.max_instances}")
    argv.append(f"--concurrency={spec.concurrency}")  # the registry's, also on re-deploys
    if spec.cpu is not None:
        argv.append(f"--cpu={spec.cpu}")
    if options.service_account:
        argv.append(f"--service-account={options.service_account}")
        if not http:  # Eventarc delivers events as this account
            argv.append(f"--trigger-service-account={options.service_account}")
    argv.append("--quiet")
    return Gcloud(tuple(argv))


def create_topic(topic: str, options: Options) -> Gcloud:
    argv = ("gcloud", "pubsub", "topics", "create", topic, f"--project={options.project}")
    return Gcloud(argv, exists_ok=True)


def scheduler_job(spec: FunctionSpec, options: Options) -> Gcloud:
    schedule, topic = _schedule(spec), topic_of(spec)
    assert schedule and topic
    time_zone = getattr(spec.trigger, "time_zone", None) or "Etc/UTC"
    flags = (
        f"--project={options.project}",
        f"--location={options.region}",
        f"--schedule={schedule}",
        f"--topic={topic}",
        "--message-body={}",
        f"--time-zone={time_zone}",
        f"--description=Triggers {spec.name} (python -m tools.deploy)",
    )
    job = f"{_kebab(spec.name)}-schedule"
    return Gcloud(
        ("gcloud", "scheduler", "jobs", "create", "pubsub", job, *flags),
        if_exists=("gcloud", "scheduler", "jobs", "update", "pubsub", job, *flags),
    )


def index_commands(indexes_file: Path, options: Options) -> list[Gcloud]:
    data = json.loads(indexes_file.read_text())
    commands = []
    for index in data.get("indexes", []):
        fields = []
        for field in index["fields"]:
            if "order" in field:
                config = f"order={field['order'].lower()}"
            elif field.get("arrayConfig") == "CONTAINS":
                config = "array-config=contains"
            else:
                raise PlanError(f"{indexes_file}: unsupported field {field}")
            fields.append(f"--field-config=field-path={field['fieldPath']},{config}")
        argv = (
            "gcloud",
            "firestore",
            "indexes",
            "composite",
            "create",
            f"--project={options.project}",
            f"--database={options.database}",
            f"--collection-group={index['collectionGroup']}",
            f"--query-scope={index.get('queryScope', 'COLLECTION').lower().replace('_', '-')}",
            *fields,
            "--async",
        )
        commands.append(Gcloud(argv, exists_ok=True))
    return commands


def field_overrides(indexes_file: Path, options: Options) -> list[FieldIndexes]:
    steps = []
    for override in json.loads(indexes_file.read_text()).get("fieldOverrides", []):
        ttl = override.get("ttl", False)
        if not isinstance(ttl, bool):
            raise PlanError(f"{indexes_file}: ttl must be true or false, not {ttl!r}")
        indexes = []
        for index in override.get("indexes", []):
            kind = "order" if "order" in index else "arrayConfig"
            if kind not in index:
                raise PlanError(f"{indexes_file}: unsupported field index {index}")
            indexes.append((index.get("queryScope", "COLLECTION"), kind, index[kind]))
        steps.append(
            FieldIndexes(
                options.project,
                options.database,
                override["collectionGroup"],
                override["fieldPath"],
                tuple(indexes),
                ttl,
            )
        )
    return steps


def enable_apis(registry: Sequence[FunctionSpec], options: Options) -> Gcloud:
    apis = list(BASE_APIS)
    if any(_schedule(spec) for spec in registry):
        apis.append(SCHEDULER_API)
    return Gcloud(("gcloud", "services", "enable", *apis, f"--project={options.project}"))


def build(options: Options, registry: Sequence[FunctionSpec] = REGISTRY) -> list[Step]:
    """Every step, in order: APIs, rules, source, topics, scheduler jobs, functions, indexes.
    The rules come first: when they need a decision, the deploy stops before anything else."""
    names = [spec.name for spec in registry]
    if len(set(names)) != len(names):
        raise PlanError(f"duplicate function names in the registry: {names}")
    steps: list[Step] = []
    if options.enable_apis:
        steps.append(enable_apis(registry, options))
    rules = ReleaseRules(options.project, options.rules, options.database, options.rules_mode)
    steps.append(rules)
    steps.append(Assemble(options.source_dir))
    steps += [create_topic(topic, options) for topic in topics(registry)]
    steps += [scheduler_job(spec, options) for spec in registry if _schedule(spec)]
    steps += [deploy_function(spec, options) for spec in registry]
    steps += index_commands(options.indexes, options)
    steps += field_overrides(options.indexes, options)
    return steps


def render(steps: Sequence[Step]) -> str:
    """The plan as ``--dry-run`` prints it: one numbered block per step."""
    return "\n".join(f"[{i}] {step.describe()}" for i, step in enumerate(steps, 1))
