"""The REST API v1 end to end on the emulators, called as Deliberate Lab's Python client calls
it (scripts/deliberate_lab/client.py): a requests.Session with ``Authorization: Bearer KEY`` and
``Content-Type: application/json``, its routes under the base URL, its bodies (``json=data``,
``json=None`` for a fork without a name). Each answer is checked against Deliberate Lab's routes:
statuses, bodies and error messages (functions/src/dl_api/)."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from functions import api_keys
from tests.integration.experiment_state import doc, participants, settle, template
from tools import auth
from tools.load_template import add_agent_participants

OWNER = "Researcher@Example.com"
DEMO = "demo_all_stages.json"


class DlClient:
    """The requests Deliberate Lab's client makes, and nothing else (no error handling: the
    tests read the raw answers)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers.update(
            {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        )

    def get(self, route: str) -> requests.Response:
        return self.session.get(f"{self.base_url}{route}", timeout=60)

    def post(self, route: str, data: Any) -> requests.Response:
        return self.session.post(f"{self.base_url}{route}", json=data, timeout=60)

    def put(self, route: str, data: Any) -> requests.Response:
        return self.session.put(f"{self.base_url}{route}", json=data, timeout=60)

    def delete(self, route: str) -> requests.Response:
        return self.session.delete(f"{self.base_url}{route}", timeout=60)


@pytest.fixture
def base_url(runtime: Any) -> str:
    return runtime.http_url("api") + "/v1"


@pytest.fixture
def client(db: Any, base_url: str) -> DlClient:
    key, _ = api_keys.create(OWNER, "tests")
    return DlClient(base_url, key)


def error(response: requests.Response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    return str(response.json()["error"])


def test_keys_are_stored_hashed_and_their_errors_are_deliberate_labs(
    db: Any, base_url: str, client: DlClient, capsys: pytest.CaptureFixture[str]
) -> None:
    assert client.get("/health").json()["status"] == "healthy"
    # the tool prints a key once; only its hash is kept, under the experimenter's id
    assert auth.main(["api-key", "Other@Example.com", "--name", "ci", "--read-only"]) == 0
    other_key = capsys.readouterr().out.strip()
    assert other_key.startswith("dlb_live_")
    stored = doc(db, f"experimenters/other@example.com/apiKeys/{api_keys.key_id(other_key)}")
    assert stored and stored["permissions"] == ["read"] and other_key not in str(stored)
    assert stored["experimenterId"] == "other@example.com" and len(stored["hash"]) == 128

    bare = requests.get(f"{base_url}/experiments", timeout=30)
    assert error(bare, 401) == (
        "Missing Authorization header. Use: Authorization: Bearer YOUR_API_KEY"
    )
    malformed = requests.get(
        f"{base_url}/experiments", headers={"Authorization": "Token abc"}, timeout=30
    )
    assert error(malformed, 401).startswith("Invalid Authorization header format.")
    assert error(DlClient(base_url, "dlb_live_wrong").get("/experiments"), 401) == (
        "Invalid or expired API key"
    )
    browser = client.session.get(
        f"{base_url}/experiments", headers={"Origin": "https://evil.example"}, timeout=30
    )
    assert error(browser, 403).startswith("Browser access not allowed.")

    reader = DlClient(base_url, other_key)
    assert error(reader.post("/experiments", {"name": "x"}), 403) == "Insufficient permissions"
    assert error(client.get("/experiments/nope"), 404) == "Experiment not found"
    assert error(client.get("/experiments/nope/export"), 404) == "Experiment not found"
    assert error(client.get("/nothing"), 404) == "Cannot GET /v1/nothing"
    assert error(client.post("/experiments", {"description": "no name"}), 400) == (
        "Invalid request body: name is required (or provide template)"
    )
    bad_stage = {"name": "x", "stages": [{"id": "s", "kind": "survey"}]}
    assert error(client.post("/experiments", bad_stage), 400) == (
        "Invalid request body: /stageConfigs/0/name: Expected string; "
        "/stageConfigs/0/descriptions: Expected object; /stageConfigs/0/progress: Expected object"
    )
    unknown = {"id": "q", "kind": "nope"}
    survey = {"id": "s", "kind": "survey", "name": "S", "descriptions": {}, "progress": {}}
    unrunnable = {"name": "x", "stages": [{**survey, "questions": [unknown]}]}
    assert error(client.post("/experiments", unrunnable), 422).startswith(
        "Invalid stage configuration: stageConfigs[0]: field 'questions[0]'"
    )

    created = client.post("/experiments", {"name": "Mine", "description": "d"})
    assert created.status_code == 201, created.text
    mine = created.json()["experiment"]["id"]
    assert error(reader.get(f"/experiments/{mine}"), 403) == "Access denied"
    assert error(reader.get(f"/experiments/{mine}/cohorts"), 403) == "Access denied"
    # a reader named in the experiment's permissions may read it
    db.document(f"experiments/{mine}").update({"permissions.readers": ["other@example.com"]})
    assert reader.get(f"/experiments/{mine}").status_code == 200
    assert error(reader.delete(f"/experiments/{mine}"), 403) == "Insufficient permissions"


def test_a_study_scripted_through_the_api_runs_and_exports(
    runtime: Any, db: Any, client: DlClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time
    demo = template(DEMO)
    created = client.post("/experiments", {"template": demo})
    assert created.status_code == 201, created.text
    experiment = created.json()["experiment"]
    e = experiment["id"]
    assert e == demo["experiment"]["id"] and experiment["metadata"]["creator"] == OWNER.lower()
    assert experiment["stageIds"] == [s["id"] for s in demo["stageConfigs"]]
    assert set(experiment["metadata"]["dateCreated"]) == {"seconds", "nanoseconds"}
    again = client.post("/experiments", {"template": demo})
    assert error(again, 409) == "Experiment with this ID already exists"

    got = client.get(f"/experiments/{e}").json()
    assert set(got) == {"experiment", "stageMap", "agentMediatorMap", "agentParticipantMap"}
    assert set(got["stageMap"]) == set(experiment["stageIds"])
    listed = client.get("/experiments").json()
    assert listed["total"] == 1 and listed["experiments"][0]["id"] == e

    made = client.post(
        f"/experiments/{e}/cohorts",
        {
            "name": "Treatment",
            "description": "API",
            "participantConfig": {"maxParticipantsPerCohort": 5},
        },
    )
    assert made.status_code == 201, made.text
    cohort = made.json()["cohort"]
    c = cohort["id"]
    assert cohort["metadata"]["name"] == "Treatment" and cohort["metadata"]["description"] == "API"
    assert cohort["participantConfig"]["maxParticipantsPerCohort"] == 5
    assert doc(db, f"experiments/{e}/cohorts/{c}/publicStageData/discussion") is not None
    bad = client.put(
        f"/experiments/{e}/cohorts/{c}",
        {"participantConfig": {"minParticipantsPerCohort": 6}},
    )
    assert error(bad, 400).startswith("minParticipantsPerCohort")
    renamed = client.put(f"/experiments/{e}/cohorts/{c}", {"name": "Treatment A"})
    assert renamed.json() == {"updated": True, "id": c}
    assert client.get(f"/experiments/{e}/cohorts").json()["total"] == 1
    assert error(client.get(f"/experiments/{e}/cohorts/nope"), 404) == "Cohort not found"

    # agents join the cohort (Deliberate Lab's API has no route for that) and finish the demo
    add_agent_participants(db, demo, e, c, 3, api_type="SCRIPTED", seed=3)
    settle(runtime, lambda: all(p.timestamps.end_experiment for p in participants(db, e)))
    one = client.get(f"/experiments/{e}/cohorts/{c}").json()
    assert one["cohort"]["metadata"]["name"] == "Treatment A" and one["participantCount"] == 3

    export = client.get(f"/experiments/{e}/export").json()
    assert {p["profile"]["currentStatus"] for p in export["participantMap"].values()} == {"SUCCESS"}
    assert len(export["cohortMap"][c]["chatMap"]["discussion"]) > 0
    assert export["spend"]["calls"] > 0 and export["errors"] == []
    logs = client.get(f"/experiments/{e}/export/logs").json()
    assert len(logs) == export["spend"]["calls"] and all("costUsd" in entry for entry in logs)
    unsupported = client.get(f"/experiments/{e}/export?format=csv")
    assert error(unsupported, 400) == "Unsupported format. Use format=json"

    forked = client.session.post(f"{client.base_url}/experiments/{e}/fork", json=None, timeout=60)
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert fork["sourceExperimentId"] == e and fork["experiment"]["id"] != e
    assert fork["experiment"]["metadata"]["name"] == f"Copy of {experiment['metadata']['name']}"
    f = fork["experiment"]["id"]
    assert set(client.get(f"/experiments/{f}").json()["stageMap"]) == set(got["stageMap"])

    survey_only = [s for s in demo["stageConfigs"] if s["id"] in ("tos", "survey")]
    updated = client.put(f"/experiments/{f}", {"name": "Short", "stages": survey_only})
    assert updated.json() == {"updated": True, "id": f}
    short = client.get(f"/experiments/{f}").json()
    assert short["experiment"]["metadata"]["name"] == "Short"
    assert short["experiment"]["stageIds"] == ["tos", "survey"] and set(short["stageMap"]) == {
        "tos",
        "survey",
    }
    mismatch = client.put(f"/experiments/{f}", {"template": {"experiment": {"id": "other"}}})
    assert error(mismatch, 400) == "Template experiment ID does not match URL parameter"

    assert client.delete(f"/experiments/{e}/cohorts/{c}").json() == {"id": c, "deleted": True}
    statuses = {
        s.to_dict()["currentStatus"] for s in db.collection(f"experiments/{e}/participants").get()
    }
    assert statuses == {"DELETED"} and doc(db, f"experiments/{e}/cohorts/{c}") is None
    assert client.delete(f"/experiments/{f}").json() == {"id": f, "deleted": True}
    assert error(client.get(f"/experiments/{f}"), 404) == "Experiment not found"


def test_the_rate_limit_is_deliberate_labs(
    client: DlClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLAB_API_RATE_LIMIT", "3")
    answers = [client.get("/health") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert [a.headers["RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert answers[-1].text == "Too many requests from this API key, please try again later."
    other, _ = api_keys.create("someone@example.com", "tests")  # counted per key
    assert DlClient(client.base_url, other).get("/health").status_code == 200
