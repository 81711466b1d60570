"""What each system's run starts from, and when it has ended: the two things a replay needs to
know of a run beyond its journal.

A run's start is rebuilt from the finished run's own documents: its configuration as it stands
(an experiment's stages and personas, a debate's data and settings, a society's settings, a
conversation's query) and its agents as they were created, without what the run wrote. The
documents keep their ids, so every model request of the replay is the request the run made
(the journal's key names the agent and stage by id).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from google.cloud import firestore

from shared.conductor.documents import Conversation, Status
from shared.debate.models import Debate, DebateStatus
from shared.models import MediatorProfile, ParticipantProfile, ParticipantStatus
from shared.models.stages import parse_stage
from shared.society.models import Society
from shared.stages.unlock import initial_unlock_map
from shared.templates import cohort_document, initial_public_data
from tools.society import client as society_client

Documents = dict[str, dict[str, Any]]
"""Documents by path, in the order they are to be written."""


class NotReplayable(Exception):
    """The run cannot be replayed (a person took part, it is not a run, it does not exist)."""


@dataclasses.dataclass(frozen=True)
class Ended:
    ok: bool
    how: str


@dataclasses.dataclass(frozen=True)
class RunKind:
    collection: str
    starts: Callable[[firestore.Client, str], Documents]
    """The documents to write, in order, for the run at this path to start again."""
    ended: Callable[[firestore.Client, str], Ended | None]
    """How the run ended, or None while it goes on."""


def _data(db: firestore.Client, path: str) -> dict[str, Any]:
    snap = db.document(path).get()
    if not snap.exists:
        raise NotReplayable(f"{path} does not exist")
    return snap.to_dict() or {}


def _researchers(
    model: type[Any], path: str, data: dict[str, Any], written: tuple[str, ...]
) -> dict[str, Any]:
    """The run document as its researcher wrote it: without the fields the backend writes
    (``written``), checked against its model (a document the run could not read is no start)."""
    try:
        model.model_validate(data)
    except ValueError as error:
        raise NotReplayable(f"{path} is not a {model.__name__}: {error}") from error
    return {k: v for k, v in data.items() if k not in written}


# -- a conductor conversation ---------------------------------------------------------------


_CONVERSATION_WRITTEN = (
    "status",
    "answer",
    "memory",
    "dispatches",
    "currentStep",
    "activeAgent",
    "error",
    "failure",
    "result",
    "outcome",
    "warnings",
    "queued",
    "visits",
    "settled",
    "createdAt",
    "updatedAt",
)


def _conversation_starts(db: firestore.Client, path: str) -> Documents:
    started = _researchers(Conversation, path, _data(db, path), _CONVERSATION_WRITTEN)
    workflow = f"workflows/{started['workflowId']}"
    docs: Documents = {workflow: _data(db, workflow)}
    for agent in db.collection(f"{workflow}/agents").stream():
        docs[agent.reference.path] = agent.to_dict() or {}
    docs[path] = started
    return docs


def _conversation_ended(db: firestore.Client, path: str) -> Ended | None:
    status = _data(db, path).get("status")
    if status in (Status.PENDING, Status.RUNNING, None):
        return None
    return Ended(status == Status.DONE, str(status))


# -- a hierarchical debate ------------------------------------------------------------------

_DEBATE_WRITTEN = ("status", "decision", "failure", "startedAt", "finishedAt")


def _debate_starts(db: firestore.Client, path: str) -> Documents:
    return {path: _researchers(Debate, path, _data(db, path), _DEBATE_WRITTEN)}


def _debate_ended(db: firestore.Client, path: str) -> Ended | None:
    status = _data(db, path).get("status")
    if status not in (DebateStatus.DONE, DebateStatus.FAILED):
        return None
    return Ended(status == DebateStatus.DONE, str(status))


# -- an agent society -----------------------------------------------------------------------


def _society_starts(db: firestore.Client, path: str) -> Documents:
    started = _researchers(Society, path, _data(db, path), ("failure",))
    if started.get("status") == "failed":  # the backend's; a researcher sets the others
        started["status"] = "running"
    return {path: started}


def _society_ended(db: firestore.Client, path: str) -> Ended | None:
    sid = path.split("/")[1]
    society = society_client.read_society(db, sid)
    if society.status == "failed":
        return Ended(False, "failed")
    closed = len(society_client.summaries(db, sid))
    return Ended(True, f"{closed} days closed") if closed >= society.settings.days else None


# -- a Deliberate Lab experiment -------------------------------------------------------------


def _collection(db: firestore.Client, path: str) -> list[Any]:
    return list(db.collection(path).stream())


def _experiment_starts(db: firestore.Client, path: str) -> Documents:
    """The experiment's configuration as it stands; its cohorts, mediators and agents as they
    were created (Deliberate Lab's initial unlock map and public data; each agent at the first
    stage, in the cohort it is in now)."""
    experiment = _data(db, path)
    docs: Documents = {path: experiment}
    stage_docs = {s.id: s.to_dict() or {} for s in _collection(db, f"{path}/stages")}
    docs |= {f"{path}/stages/{sid}": data for sid, data in stage_docs.items()}
    personas = _personas(db, path, docs)
    order = [sid for sid in experiment.get("stageIds") or [] if sid in stage_docs]
    stages = [parse_stage(f"{path}/stages/{sid}", stage_docs[sid]) for sid in order]
    for cohort in _collection(db, f"{path}/cohorts"):
        docs |= _cohort_start(experiment, cohort, stages)
    for mediator in _collection(db, f"{path}/mediators"):
        docs[mediator.reference.path] = _mediator_start(mediator.to_dict() or {}, personas)
    first = order[0] if order else ""
    for participant in _collection(db, f"{path}/participants"):
        docs[participant.reference.path] = _agent_start(
            participant.reference.path, participant.to_dict() or {}, personas, first
        )
    return docs


def _personas(db: firestore.Client, path: str, docs: Documents) -> dict[str, dict[str, Any]]:
    """The agent personas and their prompts, added to ``docs``; the personas by id."""
    personas: dict[str, dict[str, Any]] = {}
    for collection in ("agentParticipants", "agentMediators"):
        for persona in _collection(db, f"{path}/{collection}"):
            personas[persona.id] = persona.to_dict() or {}
            docs[persona.reference.path] = personas[persona.id]
            for prompt in persona.reference.collection("prompts").stream():
                docs[prompt.reference.path] = prompt.to_dict() or {}
    return personas


def _cohort_start(experiment: dict[str, Any], cohort: Any, stages: list[Any]) -> Documents:
    """A cohort as it was created: its settings, the initial unlock map and public data."""
    data = cohort.to_dict() or {}
    fresh = cohort_document(experiment, cohort.id, "", initial_unlock_map(stages))
    fresh |= {k: data[k] for k in ("metadata", "participantConfig") if k in data}
    docs: Documents = {cohort.reference.path: fresh}
    for public in initial_public_data(stages):
        docs[f"{cohort.reference.path}/publicStageData/{public['id']}"] = public
    return docs


def _profile(persona: dict[str, Any] | None) -> dict[str, Any]:
    profile = (persona or {}).get("defaultProfile") or {}
    return {k: profile.get(k) for k in ("name", "avatar", "pronouns")}


def _mediator_start(data: dict[str, Any], personas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    was = MediatorProfile.model_validate(data)
    persona = personas.get(was.agent_config.agent_id if was.agent_config else "")
    return MediatorProfile(
        private_id=was.private_id,
        public_id=was.public_id,
        current_cohort_id=was.current_cohort_id,
        active_stage_map=dict.fromkeys(was.active_stage_map, True),
        agent_config=was.agent_config,
        **_profile(persona),
    ).to_firestore()


def _agent_start(
    path: str, data: dict[str, Any], personas: dict[str, dict[str, Any]], first: str
) -> dict[str, Any]:
    was = ParticipantProfile.model_validate(data)
    if was.agent_config is None:
        raise NotReplayable(
            f"{path} is a person: what a person answered is not in the journal, so a run with"
            " people in it cannot be replayed"
        )
    return ParticipantProfile(
        private_id=was.private_id,
        public_id=was.public_id,
        current_stage_id=first,
        current_cohort_id=was.current_cohort_id,
        connected=True,
        agent_config=was.agent_config,
        **_profile(personas.get(was.agent_config.agent_id)),
    ).to_firestore()


def _experiment_ended(db: firestore.Client, path: str) -> Ended | None:
    agents = [
        ParticipantProfile.model_validate(p.to_dict() or {})
        for p in _collection(db, f"{path}/participants")
    ]
    blocked = [p.private_id for p in agents if p.agent_blocked_on]
    if blocked:
        return Ended(False, f"agents blocked: {', '.join(blocked)}")
    if all(p.current_status == ParticipantStatus.SUCCESS for p in agents):
        return Ended(True, f"{len(agents)} agents reached SUCCESS")
    return None


KINDS = {
    kind.collection: kind
    for kind in (
        RunKind("experiments", _experiment_starts, _experiment_ended),
        RunKind("debates", _debate_starts, _debate_ended),
        RunKind("societies", _society_starts, _society_ended),
        RunKind("conversations", _conversation_starts, _conversation_ended),
    )
}


def kind_of(path: str) -> RunKind:
    parts = path.strip("/").split("/")
    if len(parts) != 2 or parts[0] not in KINDS or not parts[1]:
        raise NotReplayable(
            f"{path!r} is not a run: give experiments/ID, debates/ID, societies/ID or"
            " conversations/ID"
        )
    return KINDS[parts[0]]
