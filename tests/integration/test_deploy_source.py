"""The deploy plan against the real gcloud and the assembled source in a fresh virtualenv.

gcloud check, without credentials or network: every command of the plan runs through the
installed gcloud with a fake access token (CLOUDSDK_AUTH_ACCESS_TOKEN_FILE) and every Google API
endpoint overridden (CLOUDSDK_API_ENDPOINT_OVERRIDES_*) to a local fake that answers the reads
gcloud makes first (function lookup, runtimes, project, enabled services, upload URL) and refuses
the first write with HTTP 400. A command is accepted when gcloud got as far as that write, so its
own argument parser and its client-side validation (memory suffixes, source files, trigger
flags) passed; the write's body shows how gcloud understood the flags (event filters, topic,
retry policy, memory, timeout), which is checked against the registry. Proxies point at a dead
port, so anything that tried to leave the machine would fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from emulator import processes
from functions.registry import REGISTRY, FunctionSpec, HttpTrigger, PubSubTrigger
from tools.deploy import plan, source

PROJECT = "fresh-project-1"
REGION = "europe-west1"
LOCATION = "eur3"
APIS = [
    "cloudfunctions",
    "serviceusage",
    "cloudresourcemanager",
    "pubsub",
    "cloudscheduler",
    "firestore",
    "eventarc",
    "run",
    "cloudbuild",
    "artifactregistry",
    "storage",
    "iam",
    "logging",
    "compute",
]
PUBSUB_AGENT = "serviceAccount:service-123456789@gcp-sa-pubsub.iam.gserviceaccount.com"
SERVICE_ACCOUNT = f"functions@{PROJECT}.iam.gserviceaccount.com"
GCLOUD = shutil.which("gcloud")


@dataclasses.dataclass
class Recorded:
    method: str
    path: str
    body: Any


class FakeGoogleApis(ThreadingHTTPServer):
    """Answers the reads gcloud makes before creating something; refuses every write."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[Recorded] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"

    def __enter__(self) -> FakeGoogleApis:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FakeGoogleApis

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if not path.startswith("/upload"):
            with contextlib.suppress(ValueError):
                self.server.requests.append(
                    Recorded(self.command, self.path, json.loads(raw) if raw else None)
                )
        status, body = self._route(path)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, path: str) -> tuple[int, Any]:
        get = self.command == "GET"
        if path.startswith("/upload"):
            return 200, {}
        if get and re.search(r"/functions/[^/:]+$", path):
            return 404, {
                "error": {"code": 404, "message": "no such function", "status": "NOT_FOUND"}
            }
        if get and path.endswith("/runtimes"):
            runtimes = [{"name": plan.RUNTIME, "stage": "GA", "environment": "GEN_2"}]
            return 200, {"runtimes": runtimes}
        if get and re.fullmatch(r"/v[13]/projects/[^/]+", path):
            return 200, {"projectId": PROJECT, "projectNumber": "123456789", "name": "projects/1"}
        if get and "/services/" in path:
            return 200, {"name": path, "state": "ENABLED"}
        if get and path.endswith("/defaultServiceAccount"):
            return 200, {"serviceAccountEmail": f"projects/{PROJECT}/serviceAccounts/1-compute@x"}
        if get and re.search(r"/databases/[^/]+$", path):
            return 200, {"name": path, "locationId": LOCATION, "type": "FIRESTORE_NATIVE"}
        if self.command == "POST" and path.endswith(":getIamPolicy"):
            binding = {"role": "roles/iam.serviceAccountTokenCreator", "members": [PUBSUB_AGENT]}
            return 200, {"version": 1, "etag": "BwYA", "bindings": [binding]}
        if self.command == "POST" and path.endswith(":generateUploadUrl"):
            upload = {"bucket": "b", "object": "o"}
            return 200, {"uploadUrl": f"{self.server.url}upload", "storageSource": upload}
        return 400, {"error": {"code": 400, "message": "fake stop", "status": "INVALID_ARGUMENT"}}

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer


def gcloud_env(api_url: str, config_dir: Path) -> dict[str, str]:
    token = config_dir / "token"
    token.write_text("fake-token")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDSDK_")}
    env.update(
        CLOUDSDK_CONFIG=str(config_dir),
        CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=str(token),
        CLOUDSDK_CORE_DISABLE_PROMPTS="1",
        CLOUDSDK_CORE_CHECK_GCE_METADATA="false",
        CLOUDSDK_CORE_DISABLE_USAGE_REPORTING="true",
        CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK="true",
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
    )
    for api in APIS:
        env[f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api.upper()}"] = api_url
    return env


def expected_write(argv: tuple[str, ...]) -> tuple[str, str]:
    """The request a command makes to create (or update) its resource: (method, path regex)."""
    p = rf"/v\d+/projects/{PROJECT}"
    words = argv[1:4]
    if words == ("functions", "deploy", argv[3]):
        return "POST", rf"{p}/locations/{REGION}/functions\?.*functionId={argv[3]}"
    if words == ("pubsub", "topics", "create"):
        return "PUT", rf"{p}/topics/{argv[4]}\?"
    if words == ("scheduler", "jobs", "create"):
        return "POST", rf"{p}/locations/{REGION}/jobs\?"
    if words == ("scheduler", "jobs", "update"):
        return "PATCH", rf"{p}/locations/{REGION}/jobs/{argv[5]}\?"
    if words == ("firestore", "indexes", "composite"):
        return "POST", rf"{p}/databases/\(default\)/collectionGroups/[^/]+/indexes\?"
    if words == ("services", "enable", argv[3]):
        return "POST", rf"{p}/services:batchEnable\?"
    if words == ("firestore", "fields", "ttls"):
        group = next(a.split("=", 1)[1] for a in argv if a.startswith("--collection-group="))
        field = rf"{p}/databases/\(default\)/collectionGroups/{group}/fields/{argv[5]}"
        return "PATCH", rf"{field}\?.*updateMask=ttlConfig"
    if words == ("firestore", "indexes", "fields"):
        group = next(a.split("=", 1)[1] for a in argv if a.startswith("--collection-group="))
        field = rf"{p}/databases/\(default\)/collectionGroups/{group}/fields/{argv[5]}"
        return "PATCH", rf"{field}\?.*updateMask=indexConfig"
    raise AssertionError(f"no expectation for {argv}")


def run_gcloud(argv: tuple[str, ...], tmp: Path) -> tuple[subprocess.CompletedProcess, list]:
    config = tmp / f"gcloud-{abs(hash(argv))}"
    config.mkdir()
    with FakeGoogleApis() as api:
        result = subprocess.run(
            [GCLOUD, *argv[1:]],  # type: ignore[list-item]
            env=gcloud_env(api.url, config),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return result, api.requests


def check_accepted(argv: tuple[str, ...], tmp: Path) -> Recorded:
    result, requests = run_gcloud(argv, tmp)
    command = " ".join(argv)
    assert result.returncode != 2, f"gcloud's parser rejected {command}:\n{result.stderr}"
    method, pattern = expected_write(argv)
    writes = [r for r in requests if r.method == method and re.search(pattern, r.path)]
    assert writes, (
        f"gcloud stopped before writing ({method} {pattern}): {command}\n"
        f"{result.stderr[-2000:]}\nrequests: {[(r.method, r.path) for r in requests]}"
    )
    assert "fake stop" in result.stderr, result.stderr
    return writes[-1]


def check_function_body(spec: FunctionSpec, body: dict[str, Any]) -> None:
    assert body["name"].endswith(f"/locations/{REGION}/functions/{spec.name}")
    assert body["buildConfig"]["entryPoint"] == spec.name
    assert body["buildConfig"]["runtime"] == plan.RUNTIME
    service = body["serviceConfig"]
    assert service["timeoutSeconds"] == spec.timeout_s
    assert service["availableMemory"] == spec.memory.removesuffix("B")
    assert service["environmentVariables"] == {plan.PROJECT_ENV: PROJECT}
    assert service.get("maxInstanceCount") == spec.max_instances
    assert service["serviceAccountEmail"] == SERVICE_ACCOUNT
    if isinstance(spec.trigger, HttpTrigger):  # called at its URL: no event trigger
        assert "eventTrigger" not in body
        return
    assert body["eventTrigger"]["serviceAccountEmail"] == SERVICE_ACCOUNT
    trigger = body["eventTrigger"]
    retry = "RETRY_POLICY_RETRY" if spec.retry else "RETRY_POLICY_DO_NOT_RETRY"
    assert trigger["retryPolicy"] == retry
    document = getattr(spec.trigger, "document", None)
    if document:
        assert trigger["eventType"] == spec.trigger.event_type  # type: ignore[union-attr]
        assert trigger["triggerRegion"] == LOCATION
        filters = {f["attribute"]: f for f in trigger["eventFilters"]}
        assert filters["database"]["value"] == "(default)"
        assert filters["document"] == {
            "attribute": "document",
            "operator": "match-path-pattern",
            "value": document,
        }
    else:
        assert trigger["pubsubTopic"] == f"projects/{PROJECT}/topics/{plan.topic_of(spec)}"


@dataclasses.dataclass(frozen=True)
class _Tick(PubSubTrigger):
    schedule: str = "*/5 * * * *"


def registry_with_a_schedule() -> tuple[FunctionSpec, ...]:
    """The registry, plus a scheduled function if it has none, so the scheduler commands are
    always checked."""
    if any(getattr(s.trigger, "schedule", None) for s in REGISTRY):
        return REGISTRY
    extra = FunctionSpec("scheduledProbe", _Tick("probe-tick"), "x:y", "probe")
    return (*REGISTRY, extra)


@pytest.fixture(scope="module")
def assembled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return source.assemble(tmp_path_factory.mktemp("deploy") / "source")


@pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed")
def test_every_gcloud_command_is_accepted_by_the_installed_gcloud(
    assembled: Path, tmp_path: Path
) -> None:
    registry = registry_with_a_schedule()
    options = plan.Options(
        project=PROJECT,
        region=REGION,
        source_dir=assembled,
        firestore_location=LOCATION,
        rules=source.REPO_ROOT / "firestore.rules",
        indexes=source.REPO_ROOT / "firestore.indexes.json",
        service_account=SERVICE_ACCOUNT,
    )
    commands = [s for s in plan.build(options, registry) if isinstance(s, plan.Gcloud)]
    argvs = [c.argv for c in commands] + [c.if_exists for c in commands if c.if_exists]
    assert len({a[3] for a in argvs if a[1:3] == ("functions", "deploy")}) == len(registry)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {argv: pool.submit(check_accepted, argv, tmp_path) for argv in argvs}
    failures = []
    for argv, future in futures.items():
        try:
            body = future.result()
        except AssertionError as error:
            failures.append(str(error))
            continue
        if argv[1:3] == ("functions", "deploy"):
            spec = next(s for s in registry if s.name == argv[3])
            check_function_body(spec, body.body)
    assert not failures, "\n\n".join(failures)


@pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed")
def test_field_index_requests_have_the_shape_gcloud_sends(tmp_path: Path) -> None:
    """gcloud's ``indexes fields update`` cannot set a collection-group scope, so the tool calls
    the API itself: same URL and body as gcloud's for the same indexes, scope aside."""
    options = plan.Options(
        project=PROJECT,
        region=REGION,
        source_dir=tmp_path,
        firestore_location=LOCATION,
        rules=source.REPO_ROOT / "firestore.rules",
        indexes=source.REPO_ROOT / "firestore.indexes.json",
    )
    steps = [s for s in plan.build(options) if isinstance(s, plan.FieldIndexes)]
    assert any(step.ttl for step in steps), "the journal's TTL field"
    for step in steps:
        flags = [
            f"--index={'order' if kind == 'order' else 'array-config'}={value.lower()}"
            for _, kind, value in step.indexes
        ] or ["--disable-indexes"]
        where = (
            f"--project={PROJECT}",
            f"--database={step.database}",
            f"--collection-group={step.collection_group}",
        )
        argv = ("gcloud", "firestore", "indexes", "fields", "update", step.field_path, *where)
        sent = check_accepted((*argv, *flags), tmp_path)
        assert sent.path.startswith(f"/v1/{step.path}?")
        ours = step.body()
        for index in ours["indexConfig"]["indexes"]:
            index["queryScope"] = "COLLECTION"
        ttl = ours.pop("ttlConfig", None)
        assert sent.body["indexConfig"].get("indexes", []) == ours["indexConfig"]["indexes"]
        assert sent.body == {**ours, "indexConfig": sent.body["indexConfig"]}
        if step.ttl:  # gcloud sets a TTL field on its own: the same ttlConfig
            argv = ("gcloud", "firestore", "fields", "ttls", "update", step.field_path, *where)
            sent = check_accepted((*argv, "--enable-ttl"), tmp_path)
            assert sent.path.startswith(f"/v1/{step.path}?") and "updateMask=ttlConfig" in sent.path
            assert sent.body == {"name": step.path, "ttlConfig": ttl}


@pytest.mark.skipif(GCLOUD is None, reason="gcloud is not installed")
def test_the_firestore_location_lookup_runs_in_gcloud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.deploy.__main__ import firestore_location

    config = tmp_path / "gcloud"
    config.mkdir()
    with FakeGoogleApis() as api:
        for key in [k for k in os.environ if k.startswith("CLOUDSDK_")]:
            monkeypatch.delenv(key)
        for key, value in gcloud_env(api.url, config).items():
            monkeypatch.setenv(key, value)
        assert firestore_location(PROJECT, plan.DATABASE) == LOCATION


# --- the source in a fresh virtualenv ---------------------------------------------------------


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"functions-framework exited ({proc.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {timeout} s")


@pytest.fixture(scope="module")
def venv(assembled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only the deployed requirements (pip's configured indexes).

    This process's pip installs into it (``--python``): the virtualenv gets no pip of its own
    to bootstrap. ``--no-compile``: the next tests' imports compile what they load, where
    compiling every installed module beforehand was most of the install's time."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120
    )
    python = str(env_dir / "bin/python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile"]
    result = subprocess.run(
        [*pip, "-r", str(assembled / "requirements.txt")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return env_dir


LOADS_EVERY_TARGET = """
import json, sys
import functions_framework

statuses = {}
for name in sys.argv[2:]:
    try:
        app = functions_framework.create_app(name, sys.argv[1], "cloudevent")
        statuses[name] = app.test_client().get("/").status_code
    except Exception as error:
        statuses[name] = f"{type(error).__name__}: {error}"
print(json.dumps(statuses))
"""
"""Run in the fresh virtualenv: each target through functions-framework's public
``create_app``, the call its command line makes at start-up, and a GET to each app."""


def _deployed_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST")
    }
    env["GOOGLE_CLOUD_PROJECT"] = PROJECT
    return env


def test_the_source_installs_and_functions_framework_loads_every_function(
    assembled: Path, venv: Path
) -> None:
    """Each registry function loads from the assembled main.py as Cloud Run loads it (target
    lookup fails at start-up, so an answer proves it), and a made-up name does not. One
    process for all: a server per function, each importing the whole stack, took minutes of
    the suite's two cores; the server itself is the next test's."""
    names = [spec.name for spec in REGISTRY]
    result = subprocess.run(
        [str(venv / "bin/python"), "-c", LOADS_EVERY_TARGET, "main.py", *names, "noSuchFunction"],
        cwd=assembled,
        env=_deployed_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    statuses = json.loads(result.stdout.strip().splitlines()[-1])
    assert "MissingTargetException" in str(statuses.pop("noSuchFunction")), statuses
    # A GET without a CloudEvent is refused by the function's own app.
    refused = {name: s for name, s in statuses.items() if isinstance(s, int) and 400 <= s < 500}
    assert refused.keys() == set(names), {n: s for n, s in statuses.items() if n not in refused}


def test_functions_framework_serves_a_function_from_the_source(assembled: Path, venv: Path) -> None:
    """The functions-framework command of the fresh virtualenv serves a registry function on
    its port, as Cloud Run starts it."""
    name = REGISTRY[0].name
    port = processes.free_port()
    proc = subprocess.Popen(
        [
            str(venv / "bin/functions-framework"),
            f"--target={name}",
            "--signature-type=cloudevent",
            f"--port={port}",
            "--host=127.0.0.1",
        ],
        cwd=assembled,
        env=_deployed_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        try:
            status = _wait_http(f"http://127.0.0.1:{port}/", proc)
        except AssertionError as error:
            proc.kill()
            stderr = proc.communicate(timeout=10)[1].decode(errors="replace")
            raise AssertionError(f"{name}: {error}\n{stderr[-3000:]}") from None
        assert 400 <= status < 500, f"{name}: HTTP {status}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
