"""Persona generation on the emulators (issue 32 item 4): ``python -m tools.personas generate``
samples personas, has the model write each one through the backbone's model call (logged and
counted against the experiment), writes ``agentParticipants/{personaId}``, and an agent made
from one of them carries its sketch into its prompts through a short experiment."""

from __future__ import annotations

import json

import pytest
from experiment_state import doc, model_logs, participant, settle
from raw_docs import stage, write_experiment

from functions import spend
from shared.models import ParticipantStatus
from shared.personas import sample
from tests.fakes import fake_openai as openai
from tools import personas

pytestmark = pytest.mark.usefixtures("clean")

SEED = 7
SURVEY = stage(
    "survey",
    "survey",
    questions=[{"id": "q", "kind": "text", "questionTitle": "What matters most to you?"}],
)


def _experiment(db) -> str:
    return write_experiment(db, [stage("intro", "info"), SURVEY, stage("end", "info")])


def _generate(runtime, *args: str) -> int:
    return personas.main(["--project", runtime.project, "generate", *args])


def _personas(db, e: str) -> dict[str, dict]:
    return {s.id: s.to_dict() for s in db.collection(f"experiments/{e}/agentParticipants").get()}


def test_generated_personas_are_written_and_an_agent_made_from_one_uses_it(runtime, db):
    e = _experiment(db)
    assert _generate(runtime, "--n", "3", "--experiment", e, "--seed", str(SEED)) == 0

    written = _personas(db, e)
    drawn = sample(3, SEED)
    assert sorted(written) == [f"persona-{SEED}-{p.index}" for p in drawn]
    for params in drawn:
        persona = written[f"persona-{SEED}-{params.index}"]
        assert persona["type"] == "participant" and not persona["isDefaultAddToCohort"]
        assert persona["generation"]["params"] == params.to_json()
        assert persona["defaultProfile"]["pronouns"] == params.pronouns
        assert persona["promptContext"].startswith(f"You are {persona['defaultProfile']['name']}")
    logs = [log for log in model_logs(db, e) if log.description == "persona generation"]
    assert len(logs) == 3 and all(log.response.status == "OK" for log in logs)
    assert spend.totals(f"experiments/{e}").calls == 3  # counted against the experiment

    chosen = written[f"persona-{SEED}-2"]
    (pid,) = personas.add_agents(db, e, "cohort-a", [chosen["id"]], seed=1)
    done = lambda: participant(db, e, pid).current_status == ParticipantStatus.SUCCESS  # noqa: E731
    settle(runtime, done)
    agent = participant(db, e, pid)
    assert agent.agent_config is not None
    assert agent.agent_config.prompt_context == chosen["promptContext"]
    assert agent.name == chosen["defaultProfile"]["name"]
    answered = [log for log in model_logs(db, e) if log.participant_id == pid]
    assert answered, "the agent made no model call"
    assert all(chosen["promptContext"] in log.prompt for log in answered)
    assert doc(db, f"experiments/{e}/participants/{pid}/stageData/survey") is not None


def test_personas_already_in_the_experiment_are_not_overwritten_nor_paid_for(runtime, db, capsys):
    e = _experiment(db)
    assert _generate(runtime, "--n", "2", "--experiment", e, "--seed", str(SEED)) == 0
    before = _personas(db, e)
    assert _generate(runtime, "--n", "2", "--experiment", e, "--seed", str(SEED)) == 1
    assert "already has persona-7-1, persona-7-2" in capsys.readouterr().err
    assert _personas(db, e) == before
    assert spend.totals(f"experiments/{e}").calls == 2
    assert _generate(runtime, "--n", "2", "--experiment", e, "--seed", "7", "--start", "3") == 0
    assert sorted(_personas(db, e)) == [f"persona-7-{i}" for i in (1, 2, 3, 4)]


def test_a_file_of_entries_and_the_batch_logs(runtime, db, tmp_path):
    out = tmp_path / "personas.json"
    assert _generate(runtime, "--n", "2", "--out", str(out), "--seed", "3") == 0
    entries = json.loads(out.read_text())["agentParticipants"]
    assert [x["persona"]["id"] for x in entries] == ["persona-3-1", "persona-3-2"]
    assert all(x["promptMap"] == {} and x["promptContext"] for x in entries)
    (batch,) = db.collection(personas.BATCHES).get()
    assert batch.to_dict()["seed"] == 3
    logs = batch.reference.collection("logs").get()
    assert len(logs) == 2
    assert spend.totals(batch.reference.path).calls == 2


@pytest.fixture
def fake(db, monkeypatch):
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    with openai.FakeOpenAI(api_key="sk-test") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_a_model_that_never_writes_a_valid_persona_ends_the_command_at_once(
    runtime, db, fake, capsys, tmp_path
):
    """Each answer is too short: the corrective turns (4 calls for the first persona), then
    exit 1 naming the reason; nothing is written, and the second persona is never asked for."""
    fake.default = openai.text(
        json.dumps({"name": "Dana Okafor", "occupation": "clerk", "sketch": "Hi."})
    )
    e = _experiment(db)
    code = _generate(
        runtime, "--n", "2", "--experiment", e, "--api-type", "OPENAI", "--model", "fake-model"
    )
    assert code == 1
    assert "no valid answer after 4 attempt(s)" in capsys.readouterr().err
    assert len(fake.requests) == 4
    assert _personas(db, e) == {}
    logs = model_logs(db, e)
    assert [log.response.status for log in logs] == ["INVALID_RESPONSE"] * 4
