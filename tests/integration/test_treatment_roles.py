"""Deliberate Lab's treatment roles (PR #1171) on the emulators: treatment rounds and the
private chats a round skips, observers and their representatives, inactive personas, swapped
mediators, the persona bank."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest
from chat_docs import chat_messages
from experiment_state import errors, model_logs, participant, participants, settle, template
from raw_docs import agent, human, move_human, stage, write_experiment

from console.live import read_state
from emulator.chaos import ChaosSettings
from functions import api_keys, download
from functions.agents.progression import advance_agent
from tests.integration.test_rest_api import OWNER, DlClient
from tools.export import tables as export_tables
from tools.personas import main as personas_main


@pytest.fixture(autouse=True)
def _chaos(runtime):
    """Every test here runs under chaos delivery: events delivered twice half the time, each
    delivery delayed, acknowledgements lost (the work runs again); no model faults."""
    settings = ChaosSettings(seed=42, duplicate_rate=0.5, max_delay_s=0.05, fault_rate=0.0)
    with runtime.chaos(settings):
        yield


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    """As in test_chat.py: each watchdog tick counts chat agents as idle (ticks stand for time
    passing), and a chat still empty a second after its agents arrived is opened again."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "1")


ROUNDS_STAGES = [
    stage("intro", "info"),
    stage("pc1", "privateChat"),
    stage("t1", "transfer", treatmentIndex=0),
    stage("pc2", "privateChat"),
    stage("t2", "transfer", treatmentIndex=1),
    stage("end", "info"),
]


def _rounds(*conditions: dict) -> dict[str, str]:
    return {
        "treatment": json.dumps(list(conditions)),
        "topic": json.dumps([{"t": "a"}, {"t": "b"}]),
    }


def test_a_round_skips_its_own_private_chat_and_not_the_others(runtime, db):
    """Within subjects: the round of a private chat is the following transfer's
    treatmentIndex; skipping round 0's private chat does not skip round 1's."""
    e = write_experiment(db, ROUNDS_STAGES, cohorts=("cohort-a", "cohort-b"))
    skip_first = agent(
        db,
        e,
        "intro",
        number=0,
        variableMap=_rounds({"_skipPrivateChats": True}, {"_skipPrivateChats": False}),
    )
    skip_second = agent(
        db,
        e,
        "intro",
        number=1,
        variableMap=_rounds({"_skipPrivateChats": False}, {"_skipPrivateChats": True}),
    )
    settle(
        runtime,
        lambda: (
            participant(db, e, skip_first).current_stage_id == "t1"
            and "pc1" in participant(db, e, skip_second).timestamps.ready_stages
        ),
    )
    first = participant(db, e, skip_first)
    assert "pc1" not in first.timestamps.ready_stages  # never reached, never current
    assert "pc1" not in first.timestamps.completed_stages
    # the experimenter transfers it: round 1 starts, whose private chat is not skipped
    db.document(f"experiments/{e}/participants/{skip_first}").update(
        {"transferCohortId": "cohort-b", "currentStatus": "TRANSFER_PENDING"}
    )
    settle(runtime, lambda: participant(db, e, skip_first).current_stage_id == "pc2")
    assert errors(db, e) == []


def test_the_treatment_is_hoisted_for_the_round_the_participant_is_in(runtime, db):
    """Round 0 before the first transfer naming an index, round 1 after t2; a key the next
    round omits is reset, not inherited."""
    e = write_experiment(db, ROUNDS_STAGES)
    hid = human(db, e, "intro")
    variables = _rounds(
        {"_isObserver": True, "_hasRepresentative": "true", "_swapMediator": "Skeptic"},
        {"treatmentName": "direct"},
    )
    db.document(f"experiments/{e}/participants/{hid}").update({"variableMap": variables})
    settle(runtime, lambda: participant(db, e, hid).is_observer is True)
    p = participant(db, e, hid)
    assert p.has_representative is True and p.swap_mediator == "Skeptic"
    move_human(db, e, hid, "end")  # past t2 (treatmentIndex 1)
    settle(runtime, lambda: participant(db, e, hid).is_observer is False)
    p = participant(db, e, hid)
    assert p.has_representative is False and p.swap_mediator == ""
    assert p.other_agent_generation == {"numOtherAgents": 0, "numInactivePersonas": 0}


def test_a_count_that_is_not_a_number_is_one_record_naming_the_variable(runtime, db):
    e = write_experiment(db, ROUNDS_STAGES)
    hid = human(db, e, "intro")
    db.document(f"experiments/{e}/participants/{hid}").update(
        {"variableMap": {"cond": json.dumps({"_numOtherAgents": "lots", "_isObserver": True})}}
    )
    settle(runtime, lambda: bool(errors(db, e)))
    (record,) = errors(db, e)
    assert record.field == "variableMap.cond" and "'lots' is not a number" in record.reason
    assert participant(db, e, hid).is_observer is None  # nothing hoisted from a bad treatment


def _mediator_persona(db, e: str, persona_id: str, name: str, stages: tuple[str, ...]) -> None:
    base = f"experiments/{e}/agentMediators/{persona_id}"
    db.document(base).set({"id": persona_id, "name": name, "type": "mediator"})
    for stage_id in stages:
        db.document(f"{base}/prompts/{stage_id}").set(
            {
                "id": stage_id,
                "type": "chat" if stage_id == "chat" else "privateChat",
                "prompt": [
                    {"type": "TEXT", "text": f"You are {name}."},
                    {"type": "STAGE_CONTEXT", "stageId": stage_id},
                ],
            }
        )


def _observer_experiment(db) -> str:
    chat = stage("chat", "chat", discussions=[])
    chat["progress"] = {**chat["progress"], "waitForAllParticipants": True}
    e = write_experiment(
        db,
        [
            stage("pc", "privateChat", maxNumberOfTurns=50),
            stage("t1", "transfer", treatmentIndex=0),
            chat,
            stage("end", "info"),
        ],
    )
    db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat").set(
        {"id": "chat", "kind": "chat", "currentDiscussionId": None, "discussionTimestampMap": {}}
    )
    _mediator_persona(db, e, "host", "Host", ("pc", "chat"))
    _mediator_persona(db, e, "skeptic", "Skeptic", ("chat",))
    db.document(f"experiments/{e}/mediators/med-1").set(
        {
            "privateId": "med-1",
            "publicId": "med-1",
            "name": "Host",
            "currentStatus": "active",
            "currentCohortId": "cohort-a",
            "agentConfig": {"agentId": "host", "modelSettings": {"apiType": "SCRIPTED"}},
        }
    )
    return e


def _private_message(db, e: str, hid: str, text: str) -> None:
    db.document(f"experiments/{e}/participants/{hid}/stageData/pc/privateChats/m-{hid}").set(
        {
            "id": f"m-{hid}",
            "type": "participant",
            "message": text,
            "senderId": hid,
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )


def test_an_observer_is_interviewed_then_represented_beside_inactive_personas_and_a_swap(
    runtime, db
):
    """The observer's private chat is its interview; at the group chat its representative (made
    once, under concurrent deliveries too) speaks for it, named in its prompt; two inactive
    personas are present and never chat, move or call a model, and do not block the
    wait-for-all unlock; the swapped-in mediator replaces the host in the group chat only."""
    e = _observer_experiment(db)
    other = agent(db, e, "chat", number=0)  # an agent participant of the cohort, already there
    hid = human(db, e, "pc")
    db.document(f"experiments/{e}/participants/{hid}").update(
        {
            "variableMap": _rounds(
                {
                    "_isObserver": True,
                    "_hasRepresentative": True,
                    "_numInactivePersonas": 2,
                    "_numOtherAgents": 1,
                    "_swapMediator": "Skeptic",
                },
                {"treatmentName": "direct"},
            )
        }
    )
    _private_message(db, e, hid, "I care most about quiet streets near the school.")
    settle(runtime, lambda: len(chat_messages(db, e, private_of=hid, stage_id="pc")) >= 2)
    move_human(db, e, hid, "chat")
    # duplicate and concurrent deliveries of the arrival, beside the runtime's own
    failures: list[BaseException] = []

    def arrive() -> None:
        try:
            advance_agent(e, hid)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=arrive) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    rep_id = f"{hid}-rep-chat"
    settle(runtime, lambda: participant(db, e, rep_id).current_status == "SUCCESS")
    settle(runtime, lambda: participant(db, e, other).current_status == "SUCCESS")
    added = f"{hid}-other-chat-0"  # an agent added beside the observer takes part like any
    settle(runtime, lambda: participant(db, e, added).current_status == "SUCCESS")
    assert participant(db, e, added).variable_map["treatment"] == json.dumps(
        [{}, {"treatmentName": "direct"}], separators=(",", ":")
    )  # the topic and names inherited, none of the treatment

    everyone = participants(db, e)
    reps = [p for p in everyone if p.agent_config and p.agent_config.representative_of]
    assert [(r.private_id, r.agent_config.representative_of) for r in reps] == [(rep_id, hid)]
    inactive = [p for p in everyone if p.agent_config and p.agent_config.is_inactive_persona]
    assert sorted(p.private_id for p in inactive) == [f"{hid}-inactive-chat-{i}" for i in (0, 1)]
    context = reps[0].agent_config.prompt_context
    assert "Hu's representative" in context and "quiet streets near the school" in context

    messages = chat_messages(db, e)
    senders = {m["senderId"] for m in messages if m["type"] == "participant"}
    assert reps[0].public_id in senders  # the representative speaks in the group chat
    assert not senders & {p.public_id for p in inactive} and hid not in senders
    assert "med-1" not in {m["senderId"] for m in messages}  # the host is swapped out here
    mediators = {d.id: d.to_dict() for d in db.collection(f"experiments/{e}/mediators").get()}
    assert mediators["med-1"]["activeStageMap"] == {"chat": False}  # still on in the pc
    assert mediators["mediator-cohort-a-skeptic"]["activeStageMap"] == {"chat": True}

    logs = model_logs(db, e)
    assert not [g for g in logs if g.private_id in {p.private_id for p in inactive}]
    rep_logs = [g for g in logs if g.private_id == rep_id]
    assert rep_logs and all("Hu's representative" in g.prompt for g in rep_logs)
    for p in inactive:  # present, never moved
        assert p.current_stage_id == "chat" and p.current_status == "IN_PROGRESS"
    observer = participant(db, e, hid)
    assert observer.is_observer and observer.current_stage_id == "chat"
    assert errors(db, e) == []

    # the export (the REST API's /export is the same assembly) and the console say who is who
    data = download.experiment_download(e)
    assert data is not None
    rep_public = reps[0].public_id
    assert data["roleMap"][hid] == {
        "role": "observer",
        "represents": None,
        "representedBy": [rep_public],
    }
    assert data["roleMap"][rep_public]["represents"] == hid
    assert {data["roleMap"][p.public_id]["role"] for p in inactive} == {"inactive"}
    rows = {r["participant_public_id"]: r for r in export_tables(data, [])["participants"]}
    assert (rows[rep_public]["role"], rows[rep_public]["represents"]) == ("representative", hid)
    assert rows[hid]["represented_by"] == rep_public
    shown = {a.id: a.role for a in read_state(db, e).agents}
    assert shown[rep_id] == "represents Hu" and shown[hid] == "observer"
    assert shown[f"{hid}-inactive-chat-0"] == "inactive persona" and shown[other] == ""
    assert data["roleMap"][participant(db, e, added).public_id]["role"] == "agent"


def test_the_persona_bank_under_concurrent_cohorts_claims_no_persona_twice_in_a_cohort(
    runtime, db, tmp_path, capsys
):
    """Personas stored once (the command run twice), claimed by the inactive personas of three
    cohorts reaching the chat at once: each cohort gets each of the round's personas once, the
    persona of another topic never."""
    cohorts = ("cohort-a", "cohort-b", "cohort-c")
    e = write_experiment(
        db,
        [
            stage("intro", "info"),
            stage("t1", "transfer", treatmentIndex=0),
            stage("chat", "chat"),
            stage("end", "info"),
        ],
        cohorts=cohorts,
    )
    condition = {"treatmentName": "panel", "_numInactivePersonas": 3}
    variables = {"treatment": json.dumps([condition]), "topic": json.dumps([{"t": "parks"}])}
    round_vars = {"treatment": condition, "topic": {"t": "parks"}}
    bank = {
        "personas": [
            *({"variables": round_vars, "content": f"Persona {i} on parks."} for i in range(3)),
            {"variables": {**round_vars, "topic": {"t": "roads"}}, "content": "On roads."},
        ]
    }
    path = tmp_path / "bank.json"
    path.write_text(json.dumps(bank))
    argv = ["--project", runtime.project, "bank", "--experiment", e, "--file", str(path)]
    assert personas_main(argv) == 0 and personas_main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("stored") == 4 and out.count("present") == 4

    humans = [human(db, e, "intro", cohort=c) for c in cohorts]
    for hid in humans:
        db.document(f"experiments/{e}/participants/{hid}").update({"variableMap": variables})
    runtime.wait_until_idle(timeout=60)

    def arrive(hid: str) -> None:
        move_human(db, e, hid, "chat")
        advance_agent(e, hid)

    threads = [threading.Thread(target=arrive, args=(h,)) for h in humans]
    threads += [threading.Thread(target=advance_agent, args=(e, h)) for h in humans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    settle(runtime, lambda: len([p for p in participants(db, e) if p.is_agent]) == 9)

    stored = {d.id: d.to_dict() for d in db.collection(f"experiments/{e}/personas").get()}
    parks = {pid for pid, d in stored.items() if d["variables"]["topic"] == {"t": "parks"}}
    for cohort in cohorts:
        claimed = [
            p.agent_config.persona_id
            for p in participants(db, e)
            if p.is_agent and p.current_cohort_id == cohort
        ]
        assert sorted(claimed) == sorted(parks), cohort  # each once, none of the roads
    for pid in parks:
        assert stored[pid]["usageCount"] == 3 and sorted(stored[pid]["cohorts"]) == list(cohorts)
    (roads,) = set(stored) - parks
    assert stored[roads]["usageCount"] == 0
    data = download.experiment_download(e)
    assert data is not None and set(data["personaBank"]) == set(stored)
    assert errors(db, e) == []


def _at(stamp) -> datetime:
    return stamp if isinstance(stamp, datetime) else datetime.fromtimestamp(0, UTC)


def test_dl_832_agents_take_every_group_chat_in_order_and_never_go_back(runtime, db):
    """Deliberate Lab's #832: agent participants skipped group chats and went back to earlier
    ones. Three agents through two group chats: each reaches and leaves both, in order, and
    writes in a chat only while it is at that chat."""
    chats = []
    for stage_id in ("chat1", "chat2"):
        chat = stage(stage_id, "chat", discussions=[])
        chat["progress"] = {**chat["progress"], "waitForAllParticipants": True}
        chats.append(chat)
    e = write_experiment(
        db, [stage("intro", "info"), chats[0], stage("mid", "info"), chats[1], stage("end", "info")]
    )
    for stage_id in ("chat1", "chat2"):
        db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/{stage_id}").set(
            {"id": stage_id, "kind": "chat", "currentDiscussionId": None}
        )
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, lambda: all(participant(db, e, p).current_status == "SUCCESS" for p in ids))
    for pid in ids:
        p = participant(db, e, pid)
        ts = p.timestamps
        assert {"chat1", "chat2"} <= set(ts.completed_stages)  # no chat skipped
        assert ts.ready_stages["chat1"] <= ts.completed_stages["chat1"] <= ts.ready_stages["chat2"]
        for stage_id in ("chat1", "chat2"):
            mine = [
                m
                for m in chat_messages(db, e, stage_id=stage_id)
                if m["senderId"] == p.public_id and m["type"] == "participant"
            ]
            for m in mine:  # written while at the chat, never after leaving it
                assert (
                    ts.ready_stages[stage_id]
                    <= _at(m["timestamp"])
                    <= ts.completed_stages[stage_id]
                )
    assert errors(db, e) == []


def test_dl_835_an_agent_in_a_private_chat_answers_as_a_participant(runtime, db):
    """Deliberate Lab's #835: agent participants acted as an "AI helper" in private chats. Ours
    is asked as the human participant it plays (one prompt with the transcript, never as the
    assistant side of a conversation), and is told not to sound like an AI assistant."""
    e = _observer_experiment(db)
    pid = agent(db, e, "pc", number=0)
    settle(
        runtime, lambda: any(g.private_id == pid and g.stage_id == "pc" for g in model_logs(db, e))
    )
    (log, *_) = [g for g in model_logs(db, e) if g.private_id == pid and g.stage_id == "pc"]
    assert log.prompt.startswith("You are a human participant")
    assert "Respond as this participant" in log.prompt
    assert "not like an AI assistant" in log.prompt
    assert "Host:" in log.prompt  # the host's opening, in the transcript it answers


def test_a_hoisted_count_set_by_hand_that_cannot_be_used_is_one_record(runtime, db):
    """An experimenter writes the hoisted field itself (no treatment variables): a count that is
    not a number is recorded, naming the field, and adds no agents."""
    e = write_experiment(db, ROUNDS_STAGES)
    hid = human(db, e, "intro")
    db.document(f"experiments/{e}/participants/{hid}").update(
        {"otherAgentGeneration": {"numOtherAgents": "x"}, "isObserver": True}
    )
    settle(runtime, lambda: bool(errors(db, e)))
    (record,) = errors(db, e)
    assert record.field == "otherAgentGeneration.numOtherAgents"
    assert [p.private_id for p in participants(db, e)] == [hid]


def test_the_rest_api_takes_the_template_and_its_export_says_who_represents_whom(runtime, db):
    """templates/treatment_roles.json through POST /v1/experiments (the PR's treatmentIndex
    kept), an observer of its represented round, and GET /export's roleMap."""
    api = DlClient(runtime.http_url("api") + "/v1", api_keys.create(OWNER, "tests")[0])
    tpl = template("treatment_roles.json")
    created = api.post("/experiments", {"template": tpl})
    assert created.status_code == 201, created.text
    e = created.json()["experiment"]["id"]
    stages = api.get(f"/experiments/{e}").json()["stageMap"]
    assert (stages["transfer1"]["treatmentIndex"], stages["transfer2"]["treatmentIndex"]) == (0, 1)
    c = api.post(f"/experiments/{e}/cohorts", {"name": "A"}).json()["cohort"]["id"]
    scripted = {"apiType": "SCRIPTED", "modelName": "s"}  # the template's agents use Gemini
    db.document(f"experiments/{e}").update({"spawnedAgentModelSettings": scripted})
    for mediator in db.collection(f"experiments/{e}/mediators").get():
        mediator.reference.update({"agentConfig.modelSettings": scripted})
    (config,) = [v for v in tpl["experiment"]["variableConfigs"] if v["id"] == "treatment"]
    conditions = sorted((json.loads(v) for v in config["values"]), key=lambda t: t["_isObserver"])
    hid = human(db, e, "discussion1", cohort=c)  # its represented round first (DL's draw)
    db.document(f"experiments/{e}/participants/{hid}").update(
        {"variableMap": {"treatment": json.dumps(conditions[::-1])}}
    )
    rep_id = f"{hid}-rep-discussion1"
    settle(runtime, lambda: participant(db, e, rep_id).current_status == "SUCCESS")
    assert errors(db, e) == []
    export = api.get(f"/experiments/{e}/export").json()
    rep_public = participant(db, e, rep_id).public_id
    assert export["roleMap"][hid] == {
        "role": "observer",
        "represents": None,
        "representedBy": [rep_public],
    }
    assert export["roleMap"][rep_public]["represents"] == hid
    assert export["personaBank"] == {}
