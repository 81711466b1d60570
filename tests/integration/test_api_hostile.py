"""The REST API against hostile input, through an HTTP client against the ``api`` function on
the emulators: malformed ids, types and shapes get a 400 naming the field (never a model's or
Firestore's internal text) and write nothing; a body over the limit is refused from its
``Content-Length`` before it is read; deep JSON, too many stages, agents or cohorts are
refused; guessing keys ends in 429 with ``Retry-After``; the origin is compared exactly."""

from __future__ import annotations

import http.client
import json
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from test_rest_api import DlClient, error

from functions import api_keys
from functions.api import limits

STAGE = {"id": "s", "kind": "info", "name": "S", "descriptions": {}, "progress": {}}
OWNER = "hostile@example.com"
INTERNAL = ("pydantic", "validation error", "grpc", "InvalidArgument", "Traceback", "400 ")


@pytest.fixture
def client(db: Any, runtime: Any) -> DlClient:
    """Deliberate Lab's client with a key of its own, on the ``api`` function."""
    return DlClient(runtime.http_url("api") + "/v1", api_keys.create(OWNER, "tests")[0])


@pytest.fixture(autouse=True)
def fresh_limits() -> Iterator[None]:
    """Each test counts its own requests and failures (one address: 127.0.0.1)."""
    limits.requests_counted.clear()
    limits.failures.clear()
    yield
    limits.requests_counted.clear()
    limits.failures.clear()


def refused(response: requests.Response, status: int, *named: str) -> str:
    message = error(response, status)
    assert all(name in message for name in named), message
    assert not any(word in message for word in INTERNAL), message
    assert len(message) < 400, message
    return message


def _template(experiment_id: str = "t1", **over: Any) -> dict[str, Any]:
    return {"experiment": {"id": experiment_id}, "stageConfigs": [STAGE], **over}


def test_malformed_ids_types_and_shapes_get_a_400_naming_the_field(
    db: Any, client: DlClient
) -> None:
    post = client.post
    refused(post("/experiments", {"name": 123}), 400, "/name", "Expected string")
    refused(post("/experiments", {"name": "x", "description": ["d"]}), 400, "/description")
    refused(post("/experiments", {"name": "x", "prolificConfig": "no"}), 400, "/prolificConfig")
    refused(post("/experiments", {}), 400, "name is required")
    for bad in ("..", ".", "__x__", "a/b", "x" * 1600, ""):
        if bad:
            refused(post("/experiments", {"template": _template(bad)}), 400, "/experiment/id")
        stage = {**STAGE, "id": bad}
        refused(
            post("/experiments", {"template": _template(stageConfigs=[stage])}),
            400,
            "/stageConfigs/0/id",
        )
    persona = {"id": "p1", "name": "P"}
    agents = [{"persona": persona, "promptMap": {"a/b": {}}}]
    refused(
        post("/experiments", {"template": _template(agentParticipants=agents)}),
        400,
        "/agentParticipants/0/promptMap/a/b",
    )
    agents = [{"persona": {**persona, "id": "__p__"}, "promptMap": {}}]
    refused(
        post("/experiments", {"template": _template(agentMediators=agents)}),
        400,
        "/agentMediators/0/persona/id",
    )
    typed = _template()
    typed["experiment"]["metadata"] = {"name": 123}
    refused(post("/experiments", {"template": typed}), 400, "/experiment/metadata/name")
    assert db.collection("experiments").get() == []  # nothing written

    made = post("/experiments", {"name": "Fine", "stages": [STAGE]})
    assert made.status_code == 201, made.text
    e = made.json()["experiment"]["id"]
    refused(post(f"/experiments/{e}/fork", {"name": 5}), 400, "/name")
    refused(client.put(f"/experiments/{e}", {"name": {"x": 1}}), 400, "/name")
    refused(post(f"/experiments/{e}/cohorts", {"name": 7}), 400, "/name")
    for bad in ("%2E%2E", "__x__", "x" * 1600):
        refused(client.get(f"/experiments/{bad}"), 400, "Invalid id")
        refused(client.get(f"/experiments/{e}/cohorts/{bad}"), 400, "Invalid cohortId")
    assert [s.id for s in db.collection("experiments").get()] == [e]


def test_deep_json_is_refused_before_it_is_parsed(client: DlClient) -> None:
    session, url = client.session, f"{client.base_url}/experiments"
    for deep in (
        '{"name": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"a":' * 100_000 + "1" + "}" * 100_000,
    ):
        answered = session.post(url, data=deep, timeout=60)
        refused(answered, 400, "nested deeper than 64")
    shallow = {"name": "x", "description": "[[[[" * 100}  # brackets in a string do not count
    assert client.post("/experiments", shallow).status_code == 201


def test_a_body_over_the_limit_is_refused_before_it_is_read(client: DlClient) -> None:
    """Only its first kilobyte is sent: the answer comes without waiting for the rest."""
    url = urllib.parse.urlsplit(client.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    connection.putrequest("POST", url.path + "/experiments")
    for name, value in client.session.headers.items():
        connection.putheader(name, str(value))
    connection.putheader("Content-Length", str(10_000_000))
    connection.endheaders()
    connection.send(b'{"name": "' + b"x" * 1000)
    answered = connection.getresponse()
    assert answered.status == 413
    message = json.loads(answered.read())["error"]
    assert message == f"Request body too large: at most {1 << 20} bytes"
    connection.close()
    for route, headers in (("/health", {}), ("/experiments", {"Authorization": "Bearer x"})):
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        connection.putrequest("GET" if route == "/health" else "POST", url.path + route)
        for name, value in headers.items():  # no key, or a wrong one: refused as unread
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(10_000_000))
        connection.endheaders()
        connection.send(b"x" * 1000)
        assert connection.getresponse().status == 413, route
        connection.close()


def test_stages_agents_and_cohorts_per_experiment_are_bounded(
    db: Any, client: DlClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for count in (101, 3000):  # 3,000 took 71 s to write, then stalled the stack for minutes
        stages = [{**STAGE, "id": f"s{i}"} for i in range(count)]
        started = time.monotonic()
        refused(
            client.post("/experiments", {"name": "big", "stages": stages}),
            400,
            f"/stageConfigs: at most 100 stages ({count} given)",
        )
        assert time.monotonic() - started < 10
    personas = [{"persona": {"id": f"p{i}"}, "promptMap": {}} for i in range(51)]
    refused(
        client.post("/experiments", {"template": _template(agentParticipants=personas)}),
        400,
        "at most 50 agents (51 given)",
    )
    assert db.collection("experiments").get() == []
    monkeypatch.setenv("DLAB_API_MAX_COHORTS", "2")
    e = client.post("/experiments", {"name": "x", "stages": [STAGE]}).json()["experiment"]["id"]
    for name in ("a", "b"):
        assert client.post(f"/experiments/{e}/cohorts", {"name": name}).status_code == 201
    refused(client.post(f"/experiments/{e}/cohorts", {"name": "c"}), 400, "at most 2")
    assert len(db.collection(f"experiments/{e}/cohorts").get()) == 2


def test_guessing_keys_ends_in_429_per_client_and_per_key_id(
    client: DlClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url = client.base_url
    monkeypatch.setenv("DLAB_API_AUTH_FAILURES", "5")
    answers = [
        DlClient(base_url, f"dlb_live_{secrets.token_hex(16)}").get("/experiments")
        for _ in range(110)
    ]
    assert [a.status_code for a in answers[:5]] == [401] * 5
    assert {a.status_code for a in answers[5:]} == {429}
    assert 0 < int(answers[-1].headers["Retry-After"]) <= 900
    assert client.get("/experiments").status_code == 429  # the guessing address waits
    assert len(limits.failures) <= 2 + 110

    # deployed, the address is the one Google's front end appends: one key id from many
    limits.failures.clear()
    monkeypatch.setenv("K_SERVICE", "api")
    monkeypatch.setenv("DLAB_API_AUTH_FAILURES_PER_KEY", "3")
    guess = DlClient(base_url, "dlb_live_guess")
    statuses = [
        guess.session.get(
            f"{base_url}/experiments",
            headers={"X-Forwarded-For": f"1.2.3.4, 10.0.0.{i}"},
            timeout=30,
        ).status_code
        for i in range(5)
    ]
    assert statuses == [401, 401, 401, 429, 429]
    assert client.get("/experiments").status_code == 200  # another key id, its own address


def test_the_request_limit_counts_a_key_by_its_id_and_says_when_to_retry(
    client: DlClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLAB_API_RATE_LIMIT", "2")
    answers = [client.get("/health") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert 0 < int(answers[-1].headers["Retry-After"]) <= 900
    key = str(client.session.headers["Authorization"]).split()[1]
    assert limits.requests_counted.add(api_keys.key_id(key), 900, by=0)[0] == 3
    assert limits.requests_counted.add(key, 900, by=0)[0] == 0  # not its text


def test_the_origin_is_compared_exactly(client: DlClient) -> None:
    def with_origin(origin: str) -> int:
        url = f"{client.base_url}/experiments"
        return client.session.get(url, headers={"Origin": origin}, timeout=30).status_code

    for hostile in (
        "https://localhost.evil.example",
        "https://127.0.0.1.evil.example",
        "https://evil.example/localhost",
        "null",
    ):
        assert with_origin(hostile) == 403, hostile
    for local in ("http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:5000"):
        assert with_origin(local) == 200, local
