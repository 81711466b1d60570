"""The agents a participant's treatment adds to its cohort when it reaches a group chat (their
PR #1171 adds them at the transfer): its representative (an observer with
``_hasRepresentative``), other agents (``_numOtherAgents``), inactive personas
(``_numInactivePersonas``), and a swapped-in mediator (``_swapMediator``).

Each is created under a document id that follows from the participant, the chat stage and its
number (``{participant}-rep-{stage}``, ``-other-``, ``-inactive-``;
``mediator-{cohort}-{persona}``), with an atomic create: duplicate and concurrent deliveries
of the arrival, and a crash between two creates, make each exactly once.
"""

from __future__ import annotations

import contextlib
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath

from functions import errors, reads, store
from functions.agents import persona_bank, roles
from shared import paths, treatment
from shared.models import (
    DocumentError,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    ProfileAgentConfig,
    ProgressTimestamps,
    StageConfig,
    now,
)
from shared.treatment import Treatment

TRANSCRIPT_MESSAGES = 40
"""The interview's last messages a representative's persona carries."""
MESSAGE_CHARS = 1000


def arrive(experiment: Experiment, p: ParticipantProfile) -> Treatment:
    """A participant's update at a stage: the round's treatment hoisted onto it and, at a group
    chat, the agents it adds created (each once)."""
    wanted = roles.hoist(experiment, p)
    stages = roles.stages_of(experiment) if roles.uses_treatment(p) or wanted.represented else []
    chat = next((s for s in stages if s.id == p.current_stage_id and s.kind == "chat"), None)
    if chat is None or p.timestamps.end_experiment is not None:
        return wanted
    made = _made(experiment.id, p, chat, wanted)
    if made and all(made.values()):
        return wanted  # made on an earlier update (the swap, made first, with them)
    if wanted.swap_mediator.strip():  # first: an agent made below may unlock the chat
        swap_mediator(experiment.id, p, wanted.swap_mediator.strip())
    if wanted.represented:
        representative(experiment, p, chat, stages)
    if wanted.num_other_agents or wanted.num_inactive_personas:
        _add_agents(experiment, p, chat, stages, wanted, made)
    return wanted


def _add_agents(
    experiment: Experiment,
    p: ParticipantProfile,
    chat: StageConfig,
    stages: list[StageConfig],
    wanted: Treatment,
    made: dict[str, bool],
) -> None:
    """The other agents and inactive personas not made yet, each with a persona claimed from
    the bank for the round's variables when it has one left."""
    personas = _personas(experiment.id)
    match = treatment.match_hash(
        treatment.round_variables(p.variable_map, treatment.round_of(stages, chat.id))
    )
    for kind, count in (
        ("other", wanted.num_other_agents),
        ("inactive", wanted.num_inactive_personas),
    ):
        for number in range(count):
            spawned_agent = _spawned(experiment, p, chat, kind, number, personas)
            if not made.get(spawned_agent.private_id):
                persona_bank.create_claiming(experiment.id, match, spawned_agent, p.private_id)


def _made(
    experiment_id: str, p: ParticipantProfile, chat: StageConfig, wanted: Treatment
) -> dict[str, bool]:
    """Whether each agent the treatment adds at this chat exists, by private id, read in one
    round trip: every later update of the participant at the chat reads only these."""
    ids = [representative_id(p.private_id, chat.id)] if wanted.represented else []
    ids += [spawned_id(p, chat, "other", n) for n in range(wanted.num_other_agents)]
    ids += [spawned_id(p, chat, "inactive", n) for n in range(wanted.num_inactive_personas)]
    paths = [store.participant_path(experiment_id, i) for i in ids]
    reads.batch(paths)
    return {i: store.snapshot_data(path) is not None for i, path in zip(ids, paths, strict=True)}


def spawned_id(p: ParticipantProfile, chat: StageConfig, kind: str, number: int) -> str:
    return f"{p.private_id}-{kind}-{chat.id}-{number}"


def _create(experiment_id: str, profile: ParticipantProfile) -> bool:
    """Create the agent unless it exists; True if this call created it."""
    with contextlib.suppress(gexc.AlreadyExists, gexc.Conflict):
        store.ref(store.participant_path(experiment_id, profile.private_id)).create(
            profile.to_firestore()
        )
        return True
    return False


def _arriving_beside(beside: ParticipantProfile, chat: StageConfig) -> dict[str, Any]:
    """The profile fields of an agent arriving now in ``chat``, in ``beside``'s cohort and with
    its treatment variables."""
    stamp = now()
    return {
        "current_stage_id": chat.id,
        "current_cohort_id": beside.current_cohort_id,
        "current_status": ParticipantStatus.IN_PROGRESS,
        "timestamps": ProgressTimestamps.model_validate(
            {"acceptedTOS": stamp, "startExperiment": stamp, "readyStages": {chat.id: stamp}}
        ),
        "variable_map": treatment.stripped(beside.variable_map),
    }


def _personas(experiment_id: str) -> list[dict[str, Any]]:
    col = store.db().collection(
        paths.collection_of(paths.AGENT_PARTICIPANT_PERSONA, experimentId=experiment_id)
    )
    return sorted((s.to_dict() or {} for s in col.get()), key=lambda d: str(d.get("id", "")))


def _spawned(
    experiment: Experiment,
    p: ParticipantProfile,
    chat: StageConfig,
    kind: str,
    number: int,
    personas: list[dict[str, Any]],
) -> ParticipantProfile:
    """Another agent (``other``) or an inactive persona beside ``p``, from the experiment's
    personas in turn (the PR's ``personas[i % personas.length]``)."""
    persona = personas[number % len(personas)] if personas else {}
    profile = persona.get("defaultProfile") or {}
    private_id = spawned_id(p, chat, kind, number)
    settings = persona.get("defaultModelSettings") or _model_settings(experiment)
    return ParticipantProfile(
        private_id=private_id,
        public_id=f"{p.public_id or p.private_id[:8]}-{kind}-{number}",
        name=profile.get("name") or f"Agent {number + 1}",
        avatar=profile.get("avatar") or "🤖",
        pronouns=profile.get("pronouns"),
        connected=False,
        **_arriving_beside(p, chat),
        agent_config=ProfileAgentConfig.model_validate(
            {
                "agentId": str(persona.get("id") or ""),
                "promptContext": str(persona.get("promptContext") or ""),
                "modelSettings": settings,
                "isInactivePersona": kind == "inactive" or None,
            }
        ),
    )


def _model_settings(experiment: Experiment) -> dict[str, Any]:
    """The PR's ``experiment.spawnedAgentModelSettings``, else Deliberate Lab's default."""
    extra = experiment.model_extra or {}
    settings = extra.get("spawnedAgentModelSettings")
    if isinstance(settings, dict):
        return settings
    return {"apiType": "GEMINI", "modelName": "gemini-2.5-flash"}


# --- representatives ---------------------------------------------------------------------------


def representative_id(observer_id: str, stage_id: str) -> str:
    return f"{observer_id}-rep-{stage_id}"


def representative(
    experiment: Experiment,
    observer: ParticipantProfile,
    chat: StageConfig,
    stages: list[StageConfig],
) -> bool:
    """The observer's representative in this chat, created once; True if this call made it."""
    private_id = representative_id(observer.private_id, chat.id)
    if store.snapshot_data(store.participant_path(experiment.id, private_id)) is not None:
        return False
    name = observer.display_name
    interview = _interview(experiment.id, observer, chat, stages)
    profile = ParticipantProfile(
        private_id=private_id,
        public_id=f"{observer.public_id or observer.private_id[:8]}-agent",
        name=f"{name}'s Agent",
        avatar=observer.avatar or "🤖",
        pronouns=observer.pronouns,
        connected=True,
        **_arriving_beside(observer, chat),
        agent_config=ProfileAgentConfig.model_validate(
            {
                "agentId": "",
                "promptContext": representative_context(observer, interview),
                "modelSettings": _model_settings(experiment),
                "representativeOf": observer.private_id,
            }
        ),
    )
    return _create(experiment.id, profile)


def representative_context(observer: ParticipantProfile, interview: list[str]) -> str:
    """The representative's persona: whom it represents (by name and public id), the observer's
    profile, and the private chat's interview if there was one."""
    name = observer.display_name
    lines = [
        f"You are {name}'s representative in this discussion ({name}'s public id: "
        f"{observer.public_id or observer.private_id}). You are a separate agent, not {name}. "
        f"{name} is watching the discussion and cannot write in it: speak and advocate on "
        f"{name}'s behalf, representing their perspective rather than your own opinions.",
        f"{name}'s profile: name {name}"
        + (f", pronouns {observer.pronouns}" if observer.pronouns else "")
        + (f", avatar {observer.avatar}" if observer.avatar else "")
        + ".",
    ]
    if interview:
        lines.append(f"Your interview with {name} before this discussion:")
        lines.extend(interview)
    return "\n".join(lines)


def interview_stage(stages: list[StageConfig], chat_id: str) -> StageConfig | None:
    """The private chat of the chat's round: the last private chat before it with no group
    chat between."""
    ids = [s.id for s in stages]
    for stage in reversed(stages[: ids.index(chat_id)]):
        if stage.kind == "chat":
            return None
        if stage.kind == "privateChat":
            return stage
    return None


def _interview(
    experiment_id: str, observer: ParticipantProfile, chat: StageConfig, stages: list[StageConfig]
) -> list[str]:
    """The observer's private chat of this round, as ``name: message`` lines (the last
    ``TRANSCRIPT_MESSAGES``, each cut to ``MESSAGE_CHARS``)."""
    stage = interview_stage(stages, chat.id)
    if stage is None:
        return []
    base = store.stage_data_path(experiment_id, observer.private_id, stage.id)
    snaps = store.db().collection(f"{base}/privateChats").order_by("timestamp").get()
    lines = []
    for snap in snaps[-TRANSCRIPT_MESSAGES:]:
        data = snap.to_dict() or {}
        who = (data.get("profile") or {}).get("name") or data.get("type") or "someone"
        text = str(data.get("message") or "")[:MESSAGE_CHARS]
        if text:
            lines.append(f"{who}: {text}")
    return lines


# --- swapped mediators ---------------------------------------------------------------------------


def swap_mediator(experiment_id: str, p: ParticipantProfile, wanted: str) -> bool:
    """Put the mediator persona named ``wanted`` (its id, name or profile name) in the cohort
    for the stages it has prompts for; the cohort's other mediators are turned off there
    (``activeStageMap``) and stay on elsewhere (private chats keep the default mediator). True
    if this call made the mediator."""
    col = store.db().collection(
        paths.collection_of(paths.AGENT_MEDIATOR_PERSONA, experimentId=experiment_id)
    )
    personas = [s.to_dict() or {} for s in col.get()]
    persona = next(
        (
            d
            for d in personas
            if wanted in (d.get("id"), d.get("name"), (d.get("defaultProfile") or {}).get("name"))
        ),
        None,
    )
    if persona is None:
        reason = f"no agentMediators persona has the id, name or profile name {wanted!r}"
        path = store.participant_path(experiment_id, p.private_id)
        errors.record_error(errors.current_function(), DocumentError(path, "swapMediator", reason))
        return False
    persona_id = str(persona["id"])
    persona_path = paths.build(
        paths.AGENT_MEDIATOR_PERSONA, experimentId=experiment_id, personaId=persona_id
    )
    prompts = store.db().collection(f"{persona_path}/prompts")
    covered = sorted(s.id for s in prompts.select([]).get())
    cohort = p.current_cohort_id
    present = _cohort_mediators(experiment_id, cohort)
    _turn_off_others(experiment_id, present, persona_id, covered)
    if any((m.get("agentConfig") or {}).get("agentId") == persona_id for m in present):
        return False  # the persona's mediator is in the cohort already (the PR leaves it)
    profile = persona.get("defaultProfile") or {}
    mediator = {
        "type": "mediator",
        "privateId": f"mediator-{cohort}-{persona_id}",
        "publicId": persona_id[:8],
        "name": profile.get("name") or persona.get("name"),
        "avatar": profile.get("avatar"),
        "pronouns": profile.get("pronouns"),
        "currentStatus": "active",
        "currentCohortId": cohort,
        "activeStageMap": dict.fromkeys(covered, True),
        "agentConfig": {
            "agentId": persona_id,
            "promptContext": "",
            "modelSettings": persona.get("defaultModelSettings") or {},
        },
        "swappedInFor": p.private_id,
    }
    with contextlib.suppress(gexc.AlreadyExists, gexc.Conflict):
        store.ref(f"{_mediators(experiment_id)}/{mediator['privateId']}").create(mediator)
        return True
    return False


def _mediator_persona(experiment_id: str, wanted: str) -> dict[str, Any] | None:
    """The mediator persona whose id, name or profile name is ``wanted``."""
    col = store.db().collection(
        paths.collection_of(paths.AGENT_MEDIATOR_PERSONA, experimentId=experiment_id)
    )
    for snap in col.get():
        data = snap.to_dict() or {}
        names = (data.get("id"), data.get("name"), (data.get("defaultProfile") or {}).get("name"))
        if wanted in names:
            return data
    return None


def _turn_off_others(
    experiment_id: str, present: list[dict[str, Any]], persona_id: str, covered: list[str]
) -> None:
    """The cohort's other mediators, off for the stages the swapped-in one covers."""
    for other in present:
        if (other.get("agentConfig") or {}).get("agentId") == persona_id:
            continue
        active = other.get("activeStageMap") or {}
        off = {
            FieldPath("activeStageMap", s).to_api_repr(): False
            for s in covered
            if active.get(s) is not False
        }
        if off:
            store.ref(f"{_mediators(experiment_id)}/{other['privateId']}").update(off)


def _mediators(experiment_id: str) -> str:
    return paths.collection_of(paths.MEDIATOR, experimentId=experiment_id)


def _cohort_mediators(experiment_id: str, cohort_id: str) -> list[dict[str, Any]]:
    query = (
        store.db()
        .collection(_mediators(experiment_id))
        .where(filter=firestore.FieldFilter("currentCohortId", "==", cohort_id))
    )
    return [{**(s.to_dict() or {}), "privateId": s.id} for s in query.get()]
