"""The agents' and the REST API's pure decisions: treatment roles, spawned and stored ids, a
representative's persona, the interview stage, the lazy reads of a prompt, the unlock rule;
the API's routes and request checks."""

from __future__ import annotations

from typing import Any

import pytest

from functions.agents import cohort_lock, persona_bank, prompting, roles, spawn
from functions.api import access, cohorts, experiments, routes
from functions.api.http import ApiError
from shared.models import Experiment, ParticipantProfile, StageConfig
from shared.models.participant import ProfileAgentConfig
from shared.models.stages import ChatStage, PrivateChatStage, StageProgress, TosStage

# --- roles --------------------------------------------------------------------------------


def _profile(**more: Any) -> ParticipantProfile:
    return ParticipantProfile(private_id="p1", **more)


HUMAN_OBSERVER = _profile(is_observer=True)
AGENT = _profile(agent_config=ProfileAgentConfig())
INACTIVE = _profile(agent_config=ProfileAgentConfig(is_inactive_persona=True))
REPRESENTATIVE = _profile(agent_config=ProfileAgentConfig(representative_of="p0"))


@pytest.mark.parametrize(
    ("member", "observer", "inactive", "representative", "counts", "takes_part"),
    [
        (_profile(), False, False, False, True, True),
        (HUMAN_OBSERVER, True, False, False, True, False),
        (AGENT, False, False, False, True, True),
        (INACTIVE, False, True, False, False, False),
        (REPRESENTATIVE, False, False, True, False, True),
        # an agent is never an observer, whatever its document says
        (
            _profile(is_observer=True, agent_config=ProfileAgentConfig()),
            False,
            False,
            False,
            True,
            True,
        ),
    ],
)
def test_roles_of_a_profile(
    member: ParticipantProfile,
    observer: bool,
    inactive: bool,
    representative: bool,
    counts: bool,
    takes_part: bool,
) -> None:
    assert roles.is_observer(member) is observer
    assert roles.is_inactive(member) is inactive
    assert roles.is_representative(member) is representative
    assert roles.counts_for_unlock(member) is counts
    assert roles.takes_part(member) is takes_part
    # the same answers from the raw document (a watchdog reads only some fields)
    raw = member.to_firestore()
    assert roles.is_observer(raw) is observer
    assert roles.is_inactive(raw) is inactive
    assert roles.is_representative(raw) is representative
    assert roles.takes_part(raw) is takes_part


def test_roles_of_a_sparse_document() -> None:
    assert not roles.is_observer({})
    assert roles.is_observer({"isObserver": True})
    assert not roles.is_observer({"isObserver": "yes"})  # only a true boolean
    assert not roles.is_inactive({"agentConfig": None})
    assert roles.takes_part({})


# --- spawn, persona bank ------------------------------------------------------------------


def test_spawned_and_representative_ids() -> None:
    chat = ChatStage(id="chat1")
    assert spawn.spawned_id(_profile(), chat, "mediator", 2) == "p1-mediator-chat1-2"
    assert spawn.representative_id("p1", "chat1") == "p1-rep-chat1"


def test_persona_id_follows_from_hash_and_content() -> None:
    one = persona_bank.persona_id("abcdefghijklmnopqrst", "You are calm.")
    assert one == persona_bank.persona_id("abcdefghijklmnopqrst", "You are calm.")
    assert one.startswith("abcdefghijklmnop-") and len(one) == 16 + 1 + 12
    assert one != persona_bank.persona_id("abcdefghijklmnopqrst", "You are loud.")
    assert persona_bank.persona_id("ab", "x").startswith("ab-")


def test_representative_context_names_whom_it_speaks_for() -> None:
    observer = _profile(name="Ana", public_id="fox", pronouns="she/her")
    text = spawn.representative_context(observer, ["Q: food?", "A: pasta"])
    lines = text.split("\n")
    assert lines[0].startswith("You are Ana's representative") and "public id: fox" in lines[0]
    assert lines[1] == "Ana's profile: name Ana, pronouns she/her."
    assert lines[2:] == ["Your interview with Ana before this discussion:", "Q: food?", "A: pasta"]
    bare = spawn.representative_context(_profile(), [])
    assert "p1's representative" in bare and "public id: p1" in bare
    assert "interview" not in bare


STAGES: list[StageConfig] = [
    TosStage(id="tos"),
    PrivateChatStage(id="interview1"),
    ChatStage(id="chat1"),
    ChatStage(id="chat2"),
    PrivateChatStage(id="interview3"),
    TosStage(id="between"),
    ChatStage(id="chat3"),
]


@pytest.mark.parametrize(
    ("chat", "interview"),
    [("chat1", "interview1"), ("chat2", None), ("chat3", "interview3"), ("tos", None)],
)
def test_interview_stage_of_a_chats_round(chat: str, interview: str | None) -> None:
    found = spawn.interview_stage(STAGES, chat)
    assert (found.id if found else None) == interview


# --- prompting, cohort_lock ---------------------------------------------------------------


def test_persona_prompt_path() -> None:
    assert (
        prompting.persona_prompt_path("e1", "pers", "s1")
        == "experiments/e1/agentParticipants/pers/prompts/s1"
    )


def test_lazy_mapping_and_sequence_load_once_on_first_use() -> None:
    loads: list[str] = []

    def load() -> dict[str, int]:
        loads.append("m")
        return {"a": 1, "b": 2}

    mapping = prompting.LazyMapping(load)
    assert loads == []  # nothing read until asked
    assert mapping["a"] == 1 and len(mapping) == 2 and sorted(mapping) == ["a", "b"]
    assert loads == ["m"]
    sequence = prompting.LazySequence(lambda: [1, 2, 3])
    assert sequence[-1] == 3 and len(sequence) == 3 and list(sequence[1:]) == [2, 3]


def test_shown_stages_up_to_the_current_one() -> None:
    experiment = Experiment(id="e1", stage_ids=["a", "b", "c"])
    assert prompting._shown_stages(experiment, TosStage(id="b")) == ["a", "b"]
    assert prompting._shown_stages(experiment, TosStage(id="x")) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("progress", "open_to_all"),
    [
        (StageProgress(), True),
        (StageProgress(min_participants=2), False),
        (StageProgress(wait_for_all_participants=True), False),
    ],
)
def test_open_to_all(progress: StageProgress, open_to_all: bool) -> None:
    assert cohort_lock._open_to_all(TosStage(id="s", progress=progress)) is open_to_all


def test_unlock_reads_only_its_stages_ready_stamp() -> None:
    fields = cohort_lock._unlock_fields("s1")
    assert "timestamps.readyStages.s1" in fields and "privateId" in fields
    assert not any(
        f.startswith("timestamps.readyStages.") and f != "timestamps.readyStages.s1" for f in fields
    )
    assert "timestamps" not in fields  # not every stage's stamps


# --- the REST API -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "handler", "params"),
    [
        ("GET", "/v1/experiments", experiments.list_experiments, {}),
        ("GET", "/v1/experiments/", experiments.list_experiments, {}),
        ("GET", "/v1/experiments/e1", experiments.get_experiment, {"id": "e1"}),
        ("PUT", "/v1/experiments/e1", experiments.update_experiment, {"id": "e1"}),
        ("GET", "/v1/experiments/e1/export/logs", experiments.export_logs, {"id": "e1"}),
        (
            "DELETE",
            "/v1/experiments/e1/cohorts/c1",
            cohorts.delete_cohort,
            {"experimentId": "e1", "cohortId": "c1"},
        ),
    ],
)
def test_route(method: str, path: str, handler: Any, params: dict[str, str]) -> None:
    assert routes._route(method, path) == (handler, params)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PATCH", "/v1/experiments/e1"),
        ("GET", "/v1/experiments/e1/unknown"),
        ("GET", "/v1/experiments/e1/cohorts/c1/more"),
        ("GET", "/v2/experiments"),
    ],
)
def test_no_route(method: str, path: str) -> None:
    assert routes._route(method, path) is None


def test_health_route() -> None:
    found = routes._route("GET", "/v1/health/")
    assert found is not None and found[1] == {}


def test_participant_config_bounds() -> None:
    good = {"minParticipantsPerCohort": 2, "maxParticipantsPerCohort": 4}
    assert cohorts._participant_config(good) is good
    with pytest.raises(ApiError, match="cannot be greater") as raised:
        cohorts._participant_config({"minParticipantsPerCohort": 5, "maxParticipantsPerCohort": 4})
    assert raised.value.status == 400
    with pytest.raises(ApiError, match="Invalid participantConfig"):
        cohorts._participant_config({"minParticipantsPerCohort": -1})


def test_text_fields_of_a_body() -> None:
    assert cohorts._text({"name": "x"}, "name") == "x"
    assert cohorts._text({}, "name") is None
    with pytest.raises(ApiError, match="/name: Expected string"):
        cohorts._text({}, "name", required=True)
    with pytest.raises(ApiError, match="/name: Expected string"):
        cohorts._text({"name": 3}, "name")


def test_template_shape_errors() -> None:
    assert list(experiments._shape_errors({"experiment": {}, "stageConfigs": []})) == []
    assert list(experiments._shape_errors({"stageConfigs": {}})) == [
        "/template/experiment: Expected object",
        "/template/stageConfigs: Expected array",
    ]
    stage = {"id": "s", "kind": "tos", "name": "T", "descriptions": {}, "progress": 3}
    problems = list(
        experiments._shape_errors(
            {"experiment": {}, "stageConfigs": [stage], "agentMediators": [{"persona": "x"}]}
        )
    )
    assert problems == [
        "/stageConfigs/0/progress: Expected object",
        "/agentMediators: Expected array of {persona, promptMap}",
    ]


def test_template_id_errors() -> None:
    template = {
        "experiment": {"id": "a/b"},
        "stageConfigs": [{"id": "ok"}, {"id": "."}],
        "agentParticipants": [{"persona": {"id": "fine"}, "promptMap": {"s/1": {}}}],
    }
    problems = list(experiments._id_errors(template))
    where = [p.split(":")[0] for p in problems]
    assert where == [
        "/experiment/id",
        "/stageConfigs/1/id",
        "/agentParticipants/0/promptMap/s/1",
    ]


def test_template_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_API_MAX_STAGES", "1")
    monkeypatch.setenv("DLAB_API_MAX_AGENTS", "1")
    template: dict[str, Any] = {
        "stageConfigs": [{}, {}],
        "agentMediators": [{}],
        "agentParticipants": [{}],
    }
    assert list(experiments._count_errors(template)) == [
        "/stageConfigs: at most 1 stages (2 given)",
        "/agentParticipants, /agentMediators: at most 1 agents (2 given)",
    ]


def test_simple_template_puts_the_body_over_the_experiment() -> None:
    experiment: dict[str, Any] = {"id": "e1", "metadata": {"name": "old", "creator": "me"}}
    template = experiments._simple_template(
        {"name": "new", "stages": [{"id": "s"}], "prolificConfig": {"x": 1}}, experiment
    )
    assert template["experiment"]["metadata"] == {"name": "new", "creator": "me"}
    assert template["experiment"]["prolificConfig"] == {"x": 1}
    assert template["stageConfigs"] == [{"id": "s"}]
    assert template["agentMediators"] == [] and template["agentParticipants"] == []
    assert experiment["metadata"]["name"] == "old"  # the experiment given is left as it was
    with pytest.raises(ApiError, match="/stages: Expected array"):
        experiments._simple_template({"stages": {}}, experiment)
    with pytest.raises(ApiError, match="/name: Expected string"):
        experiments._simple_template({"name": 1}, experiment)


def test_the_creator_of_an_experiment() -> None:
    assert access._creator({"metadata": {"creator": "me@x"}}) == "me@x"
    assert access._creator({"metadata": None}) == ""
    assert access._creator({}) == ""
