"""Who may do what to an experiment (Deliberate Lab's verifyExperimentAccess and
verifyExperimentOwnership), and an experiment's configuration as a template to write back."""

from __future__ import annotations

from typing import Any

from functions import download, experiment_writes, store
from functions.api.http import ApiError, Call

Json = dict[str, Any]


def _experiment(experiment_id: str) -> Json:
    experiment = download.experiment_document(experiment_id, raw=True)
    if experiment is None:
        raise ApiError(404, "Experiment not found")
    return experiment


def _creator(experiment: Json) -> str:
    return str((experiment.get("metadata") or {}).get("creator", ""))


def readable(call: Call, experiment_id: str) -> Json:
    """The experiment, if the caller created it or is one of its readers."""
    experiment = _experiment(experiment_id)
    readers = (experiment.get("permissions") or {}).get("readers") or []
    if _creator(experiment) != call.experimenter and call.experimenter not in readers:
        raise ApiError(403, "Access denied")
    return experiment


def owned(
    call: Call,
    experiment_id: str,
    refusal: str = "Only the experiment creator can perform this action",
) -> Json:
    """The experiment, if the caller created it."""
    experiment = _experiment(experiment_id)
    if _creator(experiment) != call.experimenter:
        raise ApiError(403, refusal)
    return experiment


def template_of(experiment_id: str) -> Json:
    """The stored experiment as a Deliberate Lab template (its stages in order, its agents)."""
    config = download.configuration(experiment_id, raw=True)
    if config is None:
        raise ApiError(404, "Experiment not found")
    stage_map = config["stageMap"]
    stage_ids = config["experiment"].get("stageIds") or []
    return {
        "id": experiment_id,
        "experiment": config["experiment"],
        "stageConfigs": [stage_map[s] for s in stage_ids if s in stage_map],
        "agentMediators": list(config["agentMediatorMap"].values()),
        "agentParticipants": list(config["agentParticipantMap"].values()),
    }


def write(template: Json, experiment_id: str, creator: str) -> None:
    """Write ``template`` as the experiment (its stage list from its stages, as Deliberate
    Lab's createExperimentConfig does)."""
    stage_ids = [stage["id"] for stage in template.get("stageConfigs", [])]
    experiment = {**template["experiment"], "id": experiment_id, "stageIds": stage_ids}
    experiment_writes.write_experiment(
        store.db(), {**template, "experiment": experiment}, experiment_id, creator
    )
