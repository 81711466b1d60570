"""The deploy tool: its plan follows the registry, the dry run runs nothing, the source tree is
complete, rules are released through the Firebase Rules API. (gcloud itself and a fresh
virtualenv: tests/integration/test_deploy_source.py.)"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from functions.registry import REGISTRY, FunctionSpec, HttpTrigger, PubSubTrigger
from tools.deploy import googleapis, plan, rules, rules_merge, rulesets, run, source
from tools.deploy.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
PROJECT, REGION = "fresh-project-42", "us-east1"


def options(**changes: Any) -> plan.Options:
    base = plan.Options(
        project=PROJECT,
        region=REGION,
        source_dir=Path("/tmp/src"),
        firestore_location="nam5",
        rules=ROOT / "firestore.rules",
        indexes=ROOT / "firestore.indexes.json",
    )
    return dataclasses.replace(base, **changes)


def commands(steps: list[plan.Step]) -> list[tuple[str, ...]]:
    return [s.argv for s in steps if isinstance(s, plan.Gcloud)]


def flag(argv: tuple[str, ...], name: str) -> list[str]:
    return [a.split("=", 1)[1] for a in argv if a.startswith(f"{name}=")]


@pytest.fixture
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a dry run ran {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)


# --- the dry run ------------------------------------------------------------------------------


def test_dry_run_lists_exactly_the_registry_functions(
    no_subprocess: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["--project", PROJECT, "--region", REGION, "--dry-run"]) == 0
    out = capsys.readouterr().out
    deployed = re.findall(r"^\[\d+\] gcloud functions deploy (\S+)", out, re.M)
    assert deployed == [spec.name for spec in REGISTRY]
    assert f"--project={PROJECT}" in out and "firebaserules.googleapis.com" in out
    assert not (Path("/tmp") / f"dlab-deploy-{PROJECT}").exists(), "a dry run wrote the source"


def test_dry_run_lines_are_shell_commands(
    no_subprocess: None, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--project", PROJECT, "--region", REGION, "--dry-run", "--firestore-location", "eur3"])
    out = capsys.readouterr().out
    lines = [
        line.split("] ", 1)[1] for line in out.splitlines() if re.match(r"\[\d+\] gcloud", line)
    ]
    steps = plan.build(options(firestore_location="eur3", source_dir=Path("/tmp/x")))
    assert len(lines) == len(commands(steps))
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "gcloud" and f"--project={PROJECT}" in argv
        if argv[1:3] == ["functions", "deploy"]:
            assert flag(tuple(argv), "--trigger-location") in ([], ["eur3"])


# --- the plan follows the registry ------------------------------------------------------------


def test_every_function_is_deployed_with_its_registry_settings() -> None:
    steps = plan.build(options())
    deploys = {argv[3]: argv for argv in commands(steps) if argv[1:3] == ("functions", "deploy")}
    assert list(deploys) == [spec.name for spec in REGISTRY]
    for spec in REGISTRY:
        argv = deploys[spec.name]
        assert "--gen2" in argv and "--quiet" in argv
        assert flag(argv, "--runtime") == ["python312"]
        assert flag(argv, "--region") == [REGION]
        assert flag(argv, "--source") == ["/tmp/src"]
        assert flag(argv, "--entry-point") == [spec.name]
        assert flag(argv, "--timeout") == [f"{spec.timeout_s}s"]
        assert flag(argv, "--memory") == [spec.memory]
        http = isinstance(spec.trigger, HttpTrigger)
        assert ("--retry" in argv) == spec.retry and ("--no-retry" in argv) != (spec.retry or http)
        assert flag(argv, "--update-env-vars") == [f"GOOGLE_CLOUD_PROJECT={PROJECT}"]
        if spec.max_instances is None:
            assert "--clear-max-instances" in argv
        else:
            assert flag(argv, "--max-instances") == [str(spec.max_instances)]
        assert flag(argv, "--concurrency") == [str(spec.concurrency)]
        assert flag(argv, "--cpu") == ([spec.cpu] if spec.cpu else [])
        document = getattr(spec.trigger, "document", None)
        if document:
            assert flag(argv, "--trigger-event-filters") == [
                f"type={spec.trigger.event_type}",
                "database=(default)",
            ]
            assert flag(argv, "--trigger-event-filters-path-pattern") == [f"document={document}"]
            assert flag(argv, "--trigger-location") == ["nam5"]
            assert not flag(argv, "--trigger-topic")
        elif http:
            assert "--trigger-http" in argv and not flag(argv, "--trigger-topic")
        else:
            assert flag(argv, "--trigger-topic") == [plan.topic_of(spec)]
            assert not flag(argv, "--trigger-event-filters")


def test_topics_scheduler_jobs_indexes_and_rules_are_in_the_plan() -> None:
    steps = plan.build(options())
    argvs = commands(steps)
    created = {a[4] for a in argvs if a[1:4] == ("pubsub", "topics", "create")}
    assert created == {t for spec in REGISTRY if (t := plan.topic_of(spec))}
    scheduled = [s for s in REGISTRY if getattr(s.trigger, "schedule", None)]
    jobs = [a for a in argvs if a[1:4] == ("scheduler", "jobs", "create")]
    assert len(jobs) == len(scheduled)
    for spec, job in zip(scheduled, jobs, strict=True):
        assert flag(job, "--schedule") == [spec.trigger.schedule]  # type: ignore[attr-defined]
        assert flag(job, "--topic") == [plan.topic_of(spec)]
        assert flag(job, "--location") == [REGION]
    indexes = json.loads((ROOT / "firestore.indexes.json").read_text())["indexes"]
    index_cmds = [a for a in argvs if a[1:4] == ("firestore", "indexes", "composite")]
    assert len(index_cmds) == len(indexes)
    for index, argv in zip(indexes, index_cmds, strict=True):
        assert flag(argv, "--collection-group") == [index["collectionGroup"]]
        assert flag(argv, "--field-config") == [
            f"field-path={f['fieldPath']},order={f['order'].lower()}" for f in index["fields"]
        ]
    overrides = json.loads((ROOT / "firestore.indexes.json").read_text())["fieldOverrides"]
    fields = [s for s in steps if isinstance(s, plan.FieldIndexes)]
    assert [(f.collection_group, f.field_path) for f in fields] == [
        (o["collectionGroup"], o["fieldPath"]) for o in overrides
    ]
    for field, override in zip(fields, overrides, strict=True):
        indexes = field.body()["indexConfig"]["indexes"]
        assert [i["queryScope"] for i in indexes] == [i["queryScope"] for i in override["indexes"]]
        for sent, wanted in zip(indexes, override["indexes"], strict=True):
            assert sent["fields"] == [{k: v for k, v in wanted.items() if k != "queryScope"}]
    assert isinstance(steps[1], plan.ReleaseRules) and steps[1].release_id == "cloud.firestore"
    assert steps[1].mode == "ask"
    order = [type(s).__name__ if not isinstance(s, plan.Gcloud) else s.argv[1] for s in steps]
    assert order.index("services") < order.index("ReleaseRules")  # the API is on, nothing else
    assert order.index("ReleaseRules") < order.index("Assemble") < order.index("functions")
    assert order.index("functions") < order.index("firestore")


def test_apis_are_enabled_first_unless_skipped() -> None:
    first = plan.build(options())[0]
    assert isinstance(first, plan.Gcloud) and first.argv[1:3] == ("services", "enable")
    assert "eventarc.googleapis.com" in first.argv
    assert not any(
        isinstance(s, plan.Gcloud) and s.argv[1] == "services"
        for s in plan.build(options(enable_apis=False))
    )


@dataclasses.dataclass(frozen=True)
class Cron:
    schedule: str


@dataclasses.dataclass(frozen=True)
class Http:
    url: str


def spec(name: str, trigger: Any, **kw: Any) -> FunctionSpec:
    return FunctionSpec(name, trigger, "m:f", "d", **kw)


def test_a_scheduled_function_gets_a_topic_and_a_job() -> None:
    registry = (spec("nightlyCleanup", Cron("0 3 * * *"), max_instances=1),)
    steps = plan.build(options(), registry)
    argvs = commands(steps)
    assert argvs[1][:5] == ("gcloud", "pubsub", "topics", "create", "nightly-cleanup-schedule")
    job = next(s for s in steps if isinstance(s, plan.Gcloud) and s.argv[1] == "scheduler")
    assert job.argv[5] == "nightly-cleanup-schedule" and job.if_exists is not None
    assert job.if_exists[1:5] == ("scheduler", "jobs", "update", "pubsub")
    assert "cloudscheduler.googleapis.com" in argvs[0]
    deploy = next(a for a in argvs if a[1] == "functions")
    assert flag(deploy, "--trigger-topic") == ["nightly-cleanup-schedule"]
    assert flag(deploy, "--max-instances") == ["1"]


def test_registry_problems_are_refused() -> None:
    with pytest.raises(plan.PlanError, match="cannot deploy"):
        plan.build(options(), (spec("onHttp", Http("/x")),))
    twice = (spec("a", PubSubTrigger("t1")), spec("a", PubSubTrigger("t2")))
    with pytest.raises(plan.PlanError, match="duplicate"):
        plan.build(options(), twice)


def test_service_account_applies_to_runtime_and_event_triggers() -> None:
    steps = plan.build(options(service_account="fn@p.iam.gserviceaccount.com"))
    for argv in commands(steps):
        if argv[1:3] == ("functions", "deploy"):
            assert flag(argv, "--service-account") == ["fn@p.iam.gserviceaccount.com"]
            events = "--trigger-http" not in argv  # an HTTP function has no event trigger
            assert flag(argv, "--trigger-service-account") == (
                ["fn@p.iam.gserviceaccount.com"] if events else []
            )


def test_an_http_function_is_deployed_with_its_trigger_and_access() -> None:
    """The registry's HTTP kind: --trigger-http, and --allow-unauthenticated only where the
    function checks its callers itself (the REST API's keys); no retry flag (events only)."""
    registry = (
        spec("api", HttpTrigger("/v1", public=True)),
        spec("internal", HttpTrigger("/")),
    )
    deploys = {a[3]: a for a in commands(plan.build(options(), registry)) if a[1] == "functions"}
    assert "--trigger-http" in deploys["api"] and "--allow-unauthenticated" in deploys["api"]
    assert "--no-allow-unauthenticated" in deploys["internal"]
    for argv in deploys.values():
        assert not {"--retry", "--no-retry"} & set(argv) and not flag(argv, "--trigger-topic")
    assert (
        "--trigger-http"
        in {a[3]: a for a in commands(plan.build(options())) if a[1] == "functions"}["api"]
    )
    with pytest.raises(ValueError, match="not retried"):
        spec("api", HttpTrigger(), retry=True)


# --- the source tree --------------------------------------------------------------------------


def test_source_tree_has_the_packages_main_and_requirements(tmp_path: Path) -> None:
    dest = source.assemble(tmp_path / "src")
    names = {p.name for p in dest.iterdir()}
    assert {"functions", "shared", "main.py", "requirements.txt"} <= names
    assert not {"tests", "emulator", "tools", "templates"} & names
    assert not (dest / "functions" / "deploy").exists() and not list(dest.rglob("deploy/plan.py"))
    assert not list(dest.rglob("__pycache__")) and not list(dest.rglob("*.pyc"))
    assert (dest / "shared/schemas/deliberate-lab-schemas.json").exists()
    assert (dest / "requirements.txt").read_text() == (ROOT / "requirements.txt").read_text()
    assert "functions-framework" in (dest / "requirements.txt").read_text()
    main_py = (dest / "main.py").read_text()
    for s in REGISTRY:
        assert f"\n{s.name} = _main.{s.name}\n" in main_py


def test_main_py_exposes_every_entry_point(tmp_path: Path) -> None:
    """Imported from the tree alone (cwd, no repository on the path), as the runtime does."""
    dest = source.assemble(tmp_path / "src")
    names = [s.name for s in REGISTRY]
    code = (
        "import main, functions; "
        f"assert functions.__file__.startswith({str(dest)!r}), functions.__file__; "
        f"print(all(callable(getattr(main, n)) for n in {names!r}))"
    )
    env = {"PATH": "/usr/bin:/bin", "GOOGLE_CLOUD_PROJECT": PROJECT}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=dest, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr


def test_source_dir_is_replaced_only_if_the_tool_wrote_it(tmp_path: Path) -> None:
    dest = source.assemble(tmp_path / "src")
    (dest / "stale.py").write_text("")
    source.assemble(dest)
    assert not (dest / "stale.py").exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(source.SourceError):
        source.assemble(foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"


# --- rules release ----------------------------------------------------------------------------


class FakeApi(ThreadingHTTPServer):
    """The Firebase Rules and Firestore Admin APIs, as far as the deploy tool calls them."""

    daemon_threads = True

    def __init__(self, has_release: bool = True, current: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _ApiHandler)
        self.has_release = has_release
        self.current = current
        """The source of the rules in force (None: nothing released yet)."""
        self.calls: list[tuple[str, str, Any, dict[str, str]]] = []

    def released(self) -> list[str]:
        """The sources of the rulesets created."""
        return [
            body["source"]["files"][0]["content"]
            for method, path, body, _ in self.calls
            if method == "POST" and path.endswith("/rulesets")
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _ApiHandler(BaseHTTPRequestHandler):
    server: FakeApi

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        self.server.calls.append((self.command, self.path, body, dict(self.headers)))
        status, out = 200, {}
        current = self.server.current
        if self.command == "GET" and "/releases/" in self.path:
            if current is None:
                status, out = 404, {"error": {"code": 404, "status": "NOT_FOUND"}}
            else:
                out = {"rulesetName": f"projects/{PROJECT}/rulesets/old"}
        elif self.command == "GET" and self.path.endswith("/rulesets/old"):
            out = {"source": {"files": [{"name": "firestore.rules", "content": current}]}}
        elif self.command == "POST" and self.path.endswith("/rulesets"):
            out = {"name": f"projects/{PROJECT}/rulesets/r-1"}
        elif "/fields/" in self.path:
            out = {"name": "operations/op-1"}
        elif self.command == "PATCH" and not self.server.has_release:
            status, out = 404, {"error": {"code": 404, "status": "NOT_FOUND"}}
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _answer


@contextlib.contextmanager
def fake_api(
    monkeypatch: pytest.MonkeyPatch, has_release: bool = True, current: str | None = None
) -> Iterator[FakeApi]:
    server = FakeApi(has_release, current)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for api in ("FIREBASERULES", "FIRESTORE"):
        monkeypatch.setenv(f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api}", server.url)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=[True, False], ids=["update-release", "first-release"])
def rules_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    with fake_api(monkeypatch, has_release=request.param) as server:
        yield server


def test_rules_are_released_through_the_rules_api(rules_api: FakeApi) -> None:
    step = plan.ReleaseRules(PROJECT, ROOT / "firestore.rules")
    assert rules.release(step, token="tok") == f"projects/{PROJECT}/rulesets/r-1"
    (method, path, body, headers), *rest = rules_api.calls
    assert (method, path) == ("POST", f"/v1/projects/{PROJECT}/rulesets")
    files = body["source"]["files"]
    assert files == [{"name": "firestore.rules", "content": (ROOT / "firestore.rules").read_text()}]
    assert headers["Authorization"] == "Bearer tok"
    assert headers["X-Goog-User-Project"] == PROJECT
    release = {"name": f"projects/{PROJECT}/releases/cloud.firestore", "rulesetName": "projects/"}
    release["rulesetName"] += f"{PROJECT}/rulesets/r-1"
    assert rest[0][:3] == ("PATCH", f"/v1/{release['name']}", {"release": release})
    if rules_api.has_release:
        assert len(rest) == 1
    else:
        assert rest[1][:3] == ("POST", f"/v1/projects/{PROJECT}/releases", release)


OURS = (ROOT / "firestore.rules").read_text()
THEIRS = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    function isAdmin() { return true; }  // ours is kept
    function canVote(id) { return request.auth.uid == id && "}" != "{"; }
    match /experiments/{id} { allow read: if true; }  // ours covers experiments
    match /polls/{pollId} {
      allow read: if canVote(pollId);
      match /votes/{voteId} { allow create: if canVote(voteId); }
    }
    match /{document=**} { allow read: if true; }
  }
}
"""


def deploy_rules(
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    current: str | None,
    answer: bool = False,
    ours: Path = ROOT / "firestore.rules",
) -> tuple[FakeApi, str, list[str]]:
    """The rules step of a deploy against a project whose rules in force are ``current``:
    (the API, what the step said, the questions asked)."""
    monkeypatch.setattr(googleapis, "access_token", lambda: "tok")
    step = plan.ReleaseRules(PROJECT, ours, mode=mode)
    printed: list[str] = []
    asked: list[str] = []
    with fake_api(monkeypatch, current=current) as api:
        outcome = rules.deploy(step, printed.append, lambda q: asked.append(q) or answer)
    return api, "\n".join([*printed, outcome]), asked


def test_rules_of_a_project_without_rules_are_released_without_a_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, said, asked = deploy_rules(monkeypatch, "ask", current=None)
    assert api.released() == [OURS] and not asked and "released" in said


def test_rules_this_tool_did_not_write_are_not_replaced_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(rules.RulesRefused, match="--rules=merge"):
        deploy_rules(monkeypatch, "ask", current=THEIRS)


@pytest.mark.parametrize("mode", ["replace", "merge", "skip"])
def test_foreign_rules_are_replaced_merged_or_kept_as_asked(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    api, said, asked = deploy_rules(monkeypatch, mode, current=THEIRS)
    assert not asked
    if mode == "skip":
        assert api.released() == [] and "left as they are" in said
        return
    assert "--- project's rules" in said and "+++ to release" in said  # the diff
    (released,) = api.released()
    if mode == "replace":
        assert released == OURS
        return
    assert released.startswith(OURS[: OURS.rindex("match /{document=**}")])
    assert "match /polls/{pollId}" in released and "function canVote(id)" in released
    assert "return true; }" not in released  # their isAdmin: ours stays the only one
    assert "match /experiments/{id} { allow read: if true; }" not in released
    assert "allow read: if true; }\n  }" not in released  # their open wildcard is not taken
    assert "function canVote, match polls" in said


@pytest.mark.parametrize("answer", [True, False])
def test_rules_this_tool_wrote_are_replaced_after_asking(
    monkeypatch: pytest.MonkeyPatch, answer: bool
) -> None:
    older = OURS.replace("return 4000;", "return 9000;")
    api, said, asked = deploy_rules(monkeypatch, "ask", current=older, answer=answer)
    assert len(asked) == 1 and "-      return 9000;" in said and "+      return 4000;" in said
    assert api.released() == ([OURS] if answer else [])


def test_unchanged_rules_are_not_released_again(monkeypatch: pytest.MonkeyPatch) -> None:
    api, said, asked = deploy_rules(monkeypatch, "replace", current=OURS)
    assert api.released() == [] and not asked and "unchanged" in said


def test_field_indexes_are_set_through_the_firestore_admin_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step = plan.FieldIndexes(
        PROJECT,
        "(default)",
        "publicStageData",
        "kind",
        (("COLLECTION_GROUP", "order", "ASCENDING"),),
    )
    monkeypatch.setattr(googleapis, "access_token", lambda: "tok")
    with fake_api(monkeypatch) as api:
        run.execute([step], out=lambda line: None)
    ((method, path, body, headers),) = api.calls
    assert method == "PATCH"
    assert path == f"/v1/{step.path}?updateMask=indexConfig"
    assert "/databases/(default)/collectionGroups/publicStageData/fields/kind" in path
    assert body["indexConfig"]["indexes"] == [
        {"queryScope": "COLLECTION_GROUP", "fields": [{"order": "ASCENDING"}]}
    ]
    assert headers["Authorization"] == "Bearer tok"


def test_a_ttl_field_is_set_with_its_indexes_in_one_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A ``"ttl": true`` override (the journal's expireAt) becomes the group's TTL field in the
    request that sets its indexes; other overrides leave the TTL configuration alone."""
    indexes = tmp_path / "indexes.json"
    ttl = {"collectionGroup": "journal", "fieldPath": "expireAt", "ttl": True, "indexes": []}
    indexes.write_text(json.dumps({"indexes": [], "fieldOverrides": [ttl]}))
    (step,) = plan.field_overrides(indexes, options(indexes=indexes))
    monkeypatch.setattr(googleapis, "access_token", lambda: "tok")
    with fake_api(monkeypatch) as api:
        run.execute([step], out=lambda line: None)
    ((method, path, body, _),) = api.calls
    assert method == "PATCH"
    assert path == f"/v1/{step.path}?updateMask=indexConfig,ttlConfig"
    assert "/collectionGroups/journal/fields/expireAt?" in path
    assert body["ttlConfig"] == {} and body["indexConfig"] == {"indexes": []}
    assert "ttlConfig" in step.describe()
    indexes.write_text(json.dumps({"fieldOverrides": [{**ttl, "ttl": "yes"}]}))
    with pytest.raises(plan.PlanError, match="ttl"):
        plan.field_overrides(indexes, options(indexes=indexes))


def test_the_journal_ttl_is_in_the_deploy_plan(tmp_path: Path) -> None:
    steps = plan.build(options(source_dir=tmp_path), REGISTRY)
    ttl = [s for s in steps if isinstance(s, plan.FieldIndexes) and s.ttl]
    assert [(s.collection_group, s.field_path, s.update_mask) for s in ttl] == [
        ("journal", "expireAt", "indexConfig,ttlConfig")
    ]


# --- running a plan ---------------------------------------------------------------------------


class FakeGcloud:
    """Stands in for subprocess.run: scripted outcomes by command, every call recorded."""

    def __init__(self, outcomes: dict[str, tuple[int, str]]) -> None:
        self.outcomes, self.calls = outcomes, []

    def __call__(self, argv: tuple[str, ...], **kwargs: Any) -> subprocess.CompletedProcess:
        self.calls.append(tuple(argv))
        key = " ".join(argv[1:4])
        code, stderr = self.outcomes.get(key, (0, ""))
        return subprocess.CompletedProcess(argv, code, "", stderr)


def test_execute_tolerates_what_exists_and_updates_jobs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    registry = (spec("tick", Cron("* * * * *")), *REGISTRY[:2])
    steps = plan.build(options(source_dir=tmp_path / "src"), registry)
    exists = (1, "ERROR: ALREADY_EXISTS: Resource already exists in the project")
    fake = FakeGcloud({"pubsub topics create": exists, "scheduler jobs create": exists})
    monkeypatch.setattr(run.subprocess, "run", fake)
    released: list[plan.ReleaseRules] = []
    monkeypatch.setattr(rules, "deploy", lambda step, out: released.append(step) or "r")
    patched: list[str] = []
    monkeypatch.setattr(
        googleapis, "call", lambda api, method, path, *a: patched.append(path) or {}
    )
    run.execute(steps, jobs=2, out=lambda line: None)
    assert (tmp_path / "src" / "main.py").exists() and released
    assert len(patched) == len([s for s in steps if isinstance(s, plan.FieldIndexes)])
    assert any(c[1:4] == ("scheduler", "jobs", "update") for c in fake.calls)
    deployed = {c[3] for c in fake.calls if c[1:3] == ("functions", "deploy")}
    assert deployed == {"tick", *(s.name for s in REGISTRY[:2])}


def test_execute_stops_on_a_failed_function(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    steps = plan.build(options(source_dir=tmp_path / "src"), REGISTRY[:2])
    fake = FakeGcloud({f"functions deploy {REGISTRY[1].name}": (1, "ERROR: build failed")})
    monkeypatch.setattr(run.subprocess, "run", fake)
    monkeypatch.setattr(rules, "deploy", lambda step, out: "rules checked first")
    with pytest.raises(run.DeployError, match=REGISTRY[1].name):
        run.execute(steps, out=lambda line: None)
    assert not any(c[1] == "firestore" for c in fake.calls)


# --- the two rulesets -------------------------------------------------------------------------

STRICT = ROOT / "firestore.strict.rules"


def test_the_strict_ruleset_is_the_default_one_with_strict_true() -> None:
    """firestore.strict.rules is generated (python -m tools.deploy.rulesets): it must agree
    with firestore.rules, differ only by its switch, and still be ours for the deploy tool."""
    strict = STRICT.read_text()
    assert strict == rulesets.strict_source(OURS), "run python -m tools.deploy.rulesets"
    added = [line for line in strict.splitlines() if line not in OURS.splitlines()]
    assert sorted(added) == sorted(["      return true;", rulesets.GENERATED.strip()])
    assert rules_merge.written_by_us(strict)
    with pytest.raises(rulesets.RulesetError):
        rulesets.strict_source(OURS.replace(rulesets.SWITCH, "function strict() { return 1; }"))


@pytest.mark.parametrize(
    ("argv", "released"),
    [
        ([], "firestore.rules"),
        (["--ruleset", "default"], "firestore.rules"),
        (["--ruleset", "strict"], "firestore.strict.rules"),
        (["--ruleset", "strict", "--rules-file", "/tmp/mine.rules"], "/tmp/mine.rules"),
    ],
)
def test_the_ruleset_option_picks_the_rules_file(
    no_subprocess: None, capsys: pytest.CaptureFixture[str], argv: list[str], released: str
) -> None:
    assert main(["--project", PROJECT, "--region", REGION, "--dry-run", *argv]) == 0
    (line,) = re.findall(r"# security rules (\S+) ->", capsys.readouterr().out)
    named = Path(line)
    assert named == (Path(released) if released.startswith("/") else ROOT / released)


def test_the_strict_ruleset_is_released_and_merged_like_the_default_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, _, _ = deploy_rules(monkeypatch, "merge", current=THEIRS, ours=STRICT)
    (released,) = api.released()
    assert released.startswith(STRICT.read_text()[: STRICT.read_text().rindex("match /{document")])
    assert "match /polls/{pollId}" in released and "return true;" in released
    api, _, asked = deploy_rules(monkeypatch, "ask", current=OURS, ours=STRICT, answer=True)
    assert api.released() == [STRICT.read_text()] and len(asked) == 1  # ours: asked, replaced


def test_turn_functions_serve_several_turns_per_instance_and_others_one():
    """The model-bound turns share an instance (cpu 1, as concurrency above 1 requires); a
    function whose invocation does CPU work of its own (a move, a day's close) runs alone."""
    specs = {spec.name: spec for spec in REGISTRY}
    for name in ("onAgentTurn", "onSocietyTurn", "onDebateTurn"):
        assert specs[name].concurrency > 1 and specs[name].cpu == "1"
    assert specs["onParticipantUpdated"].concurrency == 1
    with pytest.raises(ValueError, match="needs cpu >= 1"):
        dataclasses.replace(specs["onAgentTurn"], cpu=None)
