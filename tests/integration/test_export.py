"""The export for analysis: a demo experiment completed by its agents on the scripted model,
exported by ``python -m tools.export``; the files say what the documents say. The same
assembly serves the REST API's ``/export`` (its JSON is the file's) and the console's zip."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import requests

from console.app import create_app
from functions import api_keys, download
from tests.integration.experiment_state import participants, settle, template
from tools import export
from tools.load_template import load


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def as_text(row: dict[str, Any]) -> dict[str, str]:
    """A Parquet row as its CSV row reads (bools as Python writes them)."""
    return {k: str(v) for k, v in row.items()}


@pytest.fixture(scope="module")
def exported(runtime: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Any, str]:
    """One completed demo experiment, exported once (module scope: one run for every check)."""
    from google.cloud import firestore

    runtime.reset()
    mp = pytest.MonkeyPatch()
    mp.setenv("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    mp.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time passing
    db = firestore.Client(project=runtime.project)
    result = load(db, template("demo_all_stages.json"), agents=3, api_type="SCRIPTED", seed=7)
    e = result.experiment_id
    settle(runtime, lambda: all(p.timestamps.end_experiment for p in participants(db, e)))
    out = tmp_path_factory.mktemp("export")
    assert export.main([e, "--out", str(out), "--project", runtime.project]) == 0
    mp.undo()
    return e, out, db, result.cohort_id or ""


def test_the_download_is_the_documents(exported: tuple[str, Path, Any, str]) -> None:
    e, out, db, cohort = exported
    data = json.loads((out / "download.json").read_text())
    profiles = {s.id: s.to_dict() for s in db.collection(f"experiments/{e}/participants").get()}
    assert {p["profile"]["privateId"] for p in data["participantMap"].values()} == set(profiles)
    for public_id, participant in data["participantMap"].items():
        private_id = participant["profile"]["privateId"]
        assert profiles[private_id]["publicId"] == public_id
        answers = db.collection(f"experiments/{e}/participants/{private_id}/stageData").get()
        assert participant["answerMap"] == {s.id: download.plain(s.to_dict()) for s in answers}
        assert participant["profile"]["currentStatus"] == "SUCCESS"
    chats = db.collection(f"experiments/{e}/cohorts/{cohort}/publicStageData/discussion/chats")
    stored = [download.plain(s.to_dict()) for s in chats.order_by("timestamp").get()]
    assert data["cohortMap"][cohort]["chatMap"]["discussion"] == stored and stored
    stages = {s.id: s.to_dict() for s in db.collection(f"experiments/{e}/stages").get()}
    assert data["stageMap"] == stages
    assert data["experiment"]["id"] == e and data["errors"] == []
    logs = json.loads((out / "logs.json").read_text())
    assert len(logs) == data["spend"]["calls"] == len(db.collection(f"experiments/{e}/logs").get())


def test_the_tables_are_tidy_and_agree_with_the_documents(
    exported: tuple[str, Path, Any, str],
) -> None:
    e, out, db, _ = exported
    data = json.loads((out / "download.json").read_text())
    for name, columns in export.TABLES.items():
        rows = read_csv(out / f"{name}.csv")
        table = pq.read_table(out / f"{name}.parquet")
        assert table.column_names == list(columns) and list(rows[0]) == list(columns)
        assert [as_text(r) for r in table.to_pylist()] == rows, name

    answers = read_csv(out / "answers.csv")
    survey = db.collection(f"experiments/{e}/participants").get()
    for snap in survey:
        stored = db.document(f"{snap.reference.path}/stageData/survey").get().to_dict()
        public_id = snap.to_dict()["publicId"]
        mine = {r["item_id"]: r for r in answers if r["participant_public_id"] == public_id}
        rows = {k: v for k, v in mine.items() if v["stage_id"] == "survey"}
        assert set(rows) == set(stored["answerMap"])  # one row per question answered
        assert all(r["stage_kind"] == "survey" and r["is_agent"] == "True" for r in rows.values())
    answered = sum(
        max(1, len(a.get("answerMap") or {}))
        for p in data["participantMap"].values()
        for a in p["answerMap"].values()
    )
    assert len(answers) == answered

    messages = read_csv(out / "messages.csv")
    chat = data["cohortMap"][next(iter(data["cohortMap"]))]["chatMap"]["discussion"]
    assert [m["message"] for m in messages] == [m["message"] for m in chat]
    assert [m["timestamp"] for m in messages] == sorted(m["timestamp"] for m in messages)

    calls = pq.read_table(out / "model_calls.parquet").to_pylist()
    spend = data["spend"]
    assert len(calls) == spend["calls"]
    assert sum(c["prompt_tokens"] for c in calls) == spend["promptTokens"] > 0
    assert sum(c["completion_tokens"] for c in calls) == spend["completionTokens"]
    assert sum(c["cost_usd"] for c in calls) == pytest.approx(spend["costUsd"])
    assert all(c["model_name"] and c["created"] for c in calls)


def test_the_api_and_the_console_serve_the_same_download(
    runtime: Any, exported: tuple[str, Path, Any, str]
) -> None:
    e, out, db, _ = exported
    key, _ = api_keys.create("experimenter@example.com", "export test")  # load()'s creator
    response = requests.get(
        f"{runtime.http_url('api')}/v1/experiments/{e}/export",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    assert response.json() == json.loads((out / "download.json").read_text())

    console = create_app(runtime.project, db).test_client()
    page = console.get(f"/experiments/{e}/live").get_data(as_text=True)
    assert f"/experiments/{e}/export.zip" in page
    zipped = console.get(f"/experiments/{e}/export.zip")
    assert zipped.status_code == 200 and zipped.mimetype == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(zipped.data)).namelist()
    assert sorted(names) == sorted(f"{e}/{p.name}" for p in out.iterdir())
    assert console.get("/experiments/nope/export.zip").status_code == 404


def test_the_journal_is_exported_as_recorded(exported: tuple[str, Path, Any, str]) -> None:
    """journal.json holds every recorded reply of the experiment (functions/journal.py), each
    beside the log entry written with it; the table has one row per reply."""
    e, out, db, _ = exported
    stored = {s.id: s.to_dict() for s in db.collection(f"experiments/{e}/journal").get()}
    journal = json.loads((out / "journal.json").read_text())
    assert stored and [j["key"] for j in journal] == sorted(
        stored, key=lambda k: (stored[k]["recordedAt"], k)
    )
    for entry in journal:
        recorded = stored[entry["key"]]
        assert entry["text"] == recorded["text"] and entry["agent"] == recorded["agent"]
        assert entry["recordedAt"] == recorded["recordedAt"].isoformat()
        assert entry["storedBytes"] > len(recorded["text"].encode())
        log = db.document(entry["log"]).get().to_dict()
        assert log["response"]["text"] == entry["text"], entry["log"]
        assert log["response"]["usage"]["completionTokens"] == entry["completionTokens"]
    rows = read_csv(out / "journal.csv")
    assert [r["key"] for r in rows] == [j["key"] for j in journal]
    assert {r["run"] for r in rows} == {f"experiments/{e}"}
    assert [r["text"] for r in rows] == [j["text"] for j in journal]
    assert sum(int(r["prompt_tokens"]) for r in rows) == sum(j["promptTokens"] for j in journal)
