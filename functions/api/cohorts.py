"""``/v1/experiments/{experimentId}/cohorts``: list, create, get, update and delete, with
Deliberate Lab's bodies, statuses and error messages (its cohorts.dl_api.ts)."""

from __future__ import annotations

from typing import Any

import flask
from google.cloud.firestore_v1.base_query import FieldFilter
from pydantic import ValidationError

from functions import experiment_writes, store
from functions.api import access, limits
from functions.api.http import ApiError, Call, answer
from shared import paths
from shared.models import CohortConfig, CohortParticipantConfig, ParticipantStatus, now

Json = dict[str, Any]


def _cohort_path(call: Call) -> str:
    return paths.build(
        paths.COHORT, experimentId=call.params["experimentId"], cohortId=call.params["cohortId"]
    )


def _participant_config(config: Json) -> Json:
    """The merged participant config, checked as Deliberate Lab's
    validateCohortParticipantConfig checks it (a 400 otherwise)."""
    try:
        parsed = CohortParticipantConfig.model_validate(config)
    except ValidationError as error:
        raise ApiError(400, f"Invalid participantConfig: {error.errors()[0]['msg']}") from None
    low, high = parsed.min_participants_per_cohort, parsed.max_participants_per_cohort
    if low is not None and high is not None and low > high:
        raise ApiError(
            400, "minParticipantsPerCohort cannot be greater than maxParticipantsPerCohort"
        )
    return config


def _text(body: Json, field: str, required: bool = False) -> str | None:
    value = body.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"Invalid request body: /{field}: Expected string")
    return value


def _room_for_one_more(experiment_id: str) -> None:
    """At most ``DLAB_API_MAX_COHORTS`` cohorts per experiment (each one adds its public stage
    data, its mediators and the agents a client adds to it)."""
    most = limits.ApiSettings.current().api_max_cohorts
    collection = paths.collection_of(paths.COHORT, experimentId=experiment_id, cohortId="x")
    counting: Any = store.db().collection(collection).count()
    if int(counting.get()[0][0].value) >= most:
        raise ApiError(400, f"Too many cohorts: an experiment has at most {most}")


def list_cohorts(call: Call) -> flask.Response:
    call.require("read")
    experiment_id = call.params["experimentId"]
    access.readable(call, experiment_id)
    collection = paths.collection_of(paths.COHORT, experimentId=experiment_id, cohortId="x")
    cohorts = [
        {"id": snap.id, **(snap.to_dict() or {})}
        for snap in store.db().collection(collection).stream()
    ]
    return answer({"cohorts": cohorts, "total": len(cohorts)})


def create_cohort(call: Call) -> flask.Response:
    call.require("write")
    experiment_id = call.params["experimentId"]
    experiment = access.owned(call, experiment_id)
    body = call.body()
    name = _text(body, "name", required=True) or ""
    description = _text(body, "description")
    given = body.get("participantConfig") or {}
    if not isinstance(given, dict):
        raise ApiError(400, "Invalid request body: /participantConfig: Expected object")
    config = _participant_config({**(experiment.get("defaultCohortConfig") or {}), **given})
    _room_for_one_more(experiment_id)
    cohort_id, _, _ = experiment_writes.create_cohort(
        store.db(),
        access.template_of(experiment_id),
        experiment_id,
        name,
        description=description,
        participantConfig=config,
    )
    path = paths.build(paths.COHORT, experimentId=experiment_id, cohortId=cohort_id)
    snap = store.ref(path).get()
    return answer({"cohort": snap.to_dict()}, 201)


def _existing(path: str) -> Json:
    snap = store.ref(path).get()
    if not snap.exists:
        raise ApiError(404, "Cohort not found")
    return snap.to_dict() or {}


def get_cohort(call: Call) -> flask.Response:
    call.require("read")
    experiment_id, cohort_id = call.params["experimentId"], call.params["cohortId"]
    access.readable(call, experiment_id)
    cohort = _existing(_cohort_path(call))
    counting: Any = (
        store.participants(experiment_id)
        .where(filter=FieldFilter("currentCohortId", "==", cohort_id))
        .count()
    )
    count = counting.get()
    return answer(
        {"cohort": {**cohort, "id": cohort_id}, "participantCount": int(count[0][0].value)}
    )


def update_cohort(call: Call) -> flask.Response:
    call.require("write")
    access.owned(call, call.params["experimentId"])
    path = _cohort_path(call)
    cohort = _existing(path)
    body = call.body()
    metadata = {**(cohort.get("metadata") or {}), "dateModified": now()}
    for field in ("name", "description"):
        value = _text(body, field)
        if value is not None:
            metadata[field] = value
    given = body.get("participantConfig") or {}
    if not isinstance(given, dict):
        raise ApiError(400, "Invalid request body: /participantConfig: Expected object")
    config = _participant_config({**(cohort.get("participantConfig") or {}), **given})
    store.ref(path).update(CohortConfig.fields(metadata=metadata, participant_config=config))
    return answer({"updated": True, "id": call.params["cohortId"]})


def delete_cohort(call: Call) -> flask.Response:
    call.require("write")
    experiment_id, cohort_id = call.params["experimentId"], call.params["cohortId"]
    access.owned(call, experiment_id)
    path = _cohort_path(call)
    _existing(path)
    batch = store.db().batch()
    participants = store.participants(experiment_id)
    deleted = {"currentStatus": ParticipantStatus.DELETED}
    members = participants.where(filter=FieldFilter("currentCohortId", "==", cohort_id))
    for snap in members.stream():
        batch.update(snap.reference, deleted)
    joining = participants.where(filter=FieldFilter("transferCohortId", "==", cohort_id))
    for snap in joining.stream():
        batch.update(snap.reference, {**deleted, "transferCohortId": None})
    batch.commit()
    store.db().recursive_delete(store.ref(path))
    return answer({"id": cohort_id, "deleted": True})
