"""``/v1/experiments``: list, create, get, update, delete, fork, export and the model logs, with
Deliberate Lab's bodies, statuses and error messages (its experiments.dl_api.ts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import flask
from google.cloud.firestore_v1.base_query import FieldFilter
from pydantic import ValidationError

from functions import download, store
from functions.api import access, limits
from functions.api.http import ApiError, Call, answer, field_problem
from shared import paths
from shared.models import DocumentError, Experiment, now
from shared.templates import new_id, persona_documents, template_stages

Json = dict[str, Any]
AGENT_FIELDS = {"agentMediators": "agentMediators", "agentParticipants": "agentParticipants"}
NEW_EXPERIMENT: Json = {
    "prolificConfig": {
        "enableProlificIntegration": False,
        "defaultRedirectCode": "",
        "attentionFailRedirectCode": "",
        "bootedRedirectCode": "",
    },
    "defaultCohortConfig": {"includeAllParticipantsInCohortCount": False, "botProtection": False},
}
"""What Deliberate Lab's createExperimentConfig gives a new experiment beyond our model's
defaults (its schema requires them)."""


def list_experiments(call: Call) -> flask.Response:
    call.require("read")
    query = (
        store.db()
        .collection("experiments")
        .where(filter=FieldFilter("metadata.creator", "==", call.experimenter))
    )
    experiments = [{"id": snap.id, **(snap.to_dict() or {})} for snap in query.stream()]
    return answer({"experiments": experiments, "total": len(experiments)})


STAGE_FIELDS = {"id": str, "kind": str, "name": str, "descriptions": dict, "progress": dict}
"""What every Deliberate Lab stage config has (its BaseStageConfig); the rest of a stage is
checked by our stage models."""


def _shape_errors(template: Json) -> Iterator[str]:
    """Where the body is not shaped as Deliberate Lab's template (its typebox messages)."""
    if not isinstance(template.get("experiment"), dict):
        yield "/template/experiment: Expected object"
    stages = template.get("stageConfigs", [])
    if not isinstance(stages, list):
        yield "/template/stageConfigs: Expected array"
        return
    for i, stage in enumerate(stages):
        for field, kind in STAGE_FIELDS.items():
            if not isinstance(stage, dict) or not isinstance(stage.get(field), kind):
                yield f"/stageConfigs/{i}/{field}: Expected {_TYPE_NAMES[kind]}"
    for field in AGENT_FIELDS:
        agents = template.get(field, [])
        if not isinstance(agents, list) or not all(
            isinstance(a, dict) and isinstance(a.get("persona"), dict) for a in agents
        ):
            yield f"/{field}: Expected array of {{persona, promptMap}}"


_TYPE_NAMES = {str: "string", dict: "object"}


def _id_errors(template: Json) -> Iterator[str]:
    """Ids that cannot name a document: the experiment's, its stages', its personas' and
    their prompts' (keyed by stage id)."""
    given = {"/experiment/id": template["experiment"].get("id")}
    given |= {f"/stageConfigs/{i}/id": s["id"] for i, s in enumerate(template["stageConfigs"])}
    for field in AGENT_FIELDS:
        for i, agent in enumerate(template.get(field, [])):
            if "id" in agent["persona"]:
                given[f"/{field}/{i}/persona/id"] = agent["persona"]["id"]
            prompts = agent.get("promptMap") or {}
            if not isinstance(prompts, dict):
                yield f"/{field}/{i}/promptMap: Expected object"
                continue
            given |= {f"/{field}/{i}/promptMap/{k}": k for k in prompts}
    for where, value in given.items():
        problem = None if value is None else paths.id_problem(value, limits.MAX_ID_BYTES)
        if problem is not None:
            yield f"{where[:300]}: {problem}"


def _count_errors(template: Json) -> Iterator[str]:
    """More stages or agents than one experiment may have (docs/API.md: why)."""
    settings = limits.ApiSettings.current()
    stages = len(template["stageConfigs"])
    if stages > settings.api_max_stages:
        yield f"/stageConfigs: at most {settings.api_max_stages} stages ({stages} given)"
    agents = sum(len(template.get(field, [])) for field in AGENT_FIELDS)
    if agents > settings.api_max_agents:
        most = settings.api_max_agents
        yield f"/agentParticipants, /agentMediators: at most {most} agents ({agents} given)"


def _checked(template: Json) -> Json:
    """The template if it is shaped as Deliberate Lab's (a 400 'Invalid request body'
    otherwise: a type, an id, a count) and our models take its experiment, stages and
    personas (a 422, as Deliberate Lab's 'Invalid stage configuration'). Not Deliberate Lab's
    whole JSON schema: its client leaves out fields that are null (``exclude_none``), which
    its schema file still lists as required."""
    problems = list(_shape_errors(template))
    if not problems:
        problems = list(_count_errors(template)) or list(_id_errors(template))
    if problems:
        raise ApiError(400, "Invalid request body: " + "; ".join(problems[:10]))
    try:
        Experiment.model_validate({**template["experiment"], "id": "checked"})
    except ValidationError as error:
        problem = field_problem(error, "/experiment")
        raise ApiError(400, f"Invalid request body: {problem}") from None
    _stages(template)
    try:
        persona_documents(template)
    except ValidationError as error:
        raise ApiError(422, f"Invalid agent configuration: {error.errors()[0]['msg']}") from None
    return template


def _stages(template: Json) -> None:
    """A stage our models cannot run: Deliberate Lab's 422 'Invalid stage configuration'."""
    try:
        template_stages(template)
    except DocumentError as error:
        raise ApiError(422, f"Invalid stage configuration: {error}") from None


def _blank(experiment_id: str) -> Json:
    return Experiment(id=experiment_id).to_firestore() | NEW_EXPERIMENT


def _simple_template(body: Json, experiment: Json) -> Json:
    """Deliberate Lab's simple creation (or partial update): the experiment's fields and lists
    given in the body over ``experiment``'s."""
    metadata = dict(experiment.get("metadata") or {})
    for field in ("name", "description"):
        if body.get(field) is not None:
            metadata[field] = _string(body, field)
    fields = {"metadata": metadata}
    if body.get("prolificConfig") is not None:
        if not isinstance(body["prolificConfig"], dict):
            raise ApiError(400, "Invalid request body: /prolificConfig: Expected object")
        fields["prolificConfig"] = body["prolificConfig"]
    template: Json = {"experiment": {**experiment, **fields}}
    for field in ("stages", *AGENT_FIELDS):
        if not isinstance(body.get(field, []), list):
            raise ApiError(400, f"Invalid request body: /{field}: Expected array")
    template["stageConfigs"] = body.get("stages") or []
    for field in AGENT_FIELDS:
        template[field] = body.get(field) or []
    return template


def _string(body: Json, field: str) -> str:
    value = body[field]
    if not isinstance(value, str):
        raise ApiError(400, f"Invalid request body: /{field}: Expected string")
    return value


def _created(experiment_id: str) -> Json:
    experiment = download.experiment_document(experiment_id) or {}
    return {**experiment, "id": experiment_id}


def create_experiment(call: Call) -> flask.Response:
    call.require("write")
    body = call.body()
    if body.get("template") is not None:
        if not isinstance(body["template"], dict):
            raise ApiError(400, "Invalid request body: /template: Expected object")
        template = _checked(body["template"])
        experiment_id = str(template["experiment"].get("id") or new_id())
    else:
        if not body.get("name"):
            raise ApiError(400, "Invalid request body: name is required (or provide template)")
        experiment_id = new_id()
        template = _checked({"id": experiment_id, **_simple_template(body, _blank(experiment_id))})
    if download.experiment_document(experiment_id) is not None:
        raise ApiError(409, "Experiment with this ID already exists")
    access.write(template, experiment_id, call.experimenter)
    return answer({"experiment": _created(experiment_id)}, 201)


def _readable_id(call: Call) -> str:
    """The id of the experiment the route names, once the caller may read it."""
    call.require("read")
    experiment_id = call.params["id"]
    access.readable(call, experiment_id)
    return experiment_id


def get_experiment(call: Call) -> flask.Response:
    experiment_id = _readable_id(call)
    config = download.configuration(experiment_id)
    if config is None:
        raise ApiError(500, "Failed to load experiment data")
    config["experiment"] = {**config["experiment"], "id": experiment_id}
    return answer(config)


def _clear_configuration(experiment_id: str) -> None:
    """The experiment's stages and agents (with their prompts), before a replacement."""
    base = paths.build(paths.EXPERIMENT, experimentId=experiment_id)
    for collection in ("stages", *AGENT_FIELDS):
        for ref in store.db().collection(f"{base}/{collection}").list_documents():
            store.db().recursive_delete(ref)


def update_experiment(call: Call) -> flask.Response:
    call.require("write")
    experiment_id = call.params["id"]
    body = call.body()
    if body.get("template") is not None:
        template = body["template"]
        if not isinstance(template, dict) or not isinstance(template.get("experiment"), dict):
            raise ApiError(400, "Invalid request body: /template: Expected object")
        given = template["experiment"].get("id")
        if given and given != experiment_id:
            raise ApiError(400, "Template experiment ID does not match URL parameter")
        access.owned(call, experiment_id, "Only the creator can update the experiment")
        template = {**template, "experiment": {**template["experiment"], "id": experiment_id}}
    else:
        access.owned(call, experiment_id, "Only the creator can update the experiment")
        _checked({"id": experiment_id, **_simple_template(body, _blank(experiment_id))})
        current = access.template_of(experiment_id)
        given_lists = {"stages": "stageConfigs", **AGENT_FIELDS}
        kept = {k: current[v] for k, v in given_lists.items() if body.get(k) is None}
        template = _simple_template({**body, **kept}, current["experiment"])
        _stages(template)  # what is stored already passed the schema when it was written
        _write_over(experiment_id, template, call.experimenter)
        return answer({"updated": True, "id": experiment_id})
    _write_over(experiment_id, _checked(template), call.experimenter)
    return answer({"updated": True, "id": experiment_id})


def _write_over(experiment_id: str, template: Json, creator: str) -> None:
    """Replace the experiment's configuration by ``template``, its creation date kept."""
    stored = download.experiment_document(experiment_id, raw=True) or {}
    metadata = {**(template["experiment"].get("metadata") or {})}
    metadata["dateCreated"] = (stored.get("metadata") or {}).get("dateCreated") or now()
    template["experiment"] = {**template["experiment"], "metadata": metadata}
    _clear_configuration(experiment_id)
    access.write(template, experiment_id, creator)


def delete_experiment(call: Call) -> flask.Response:
    call.require("write")
    experiment_id = call.params["id"]
    access.owned(call, experiment_id, "Only the experiment creator can delete")
    store.db().recursive_delete(
        store.ref(paths.build(paths.EXPERIMENT, experimentId=experiment_id))
    )
    return answer({"id": experiment_id, "deleted": True})


def export_experiment(call: Call) -> flask.Response:
    experiment_id = _readable_id(call)
    data = download.experiment_download(experiment_id)
    if data is None:
        raise ApiError(500, "Failed to load experiment data")
    if call.request.args.get("format", "json") != "json":
        raise ApiError(400, "Unsupported format. Use format=json")
    return answer(data)


def export_logs(call: Call) -> flask.Response:
    experiment_id = _readable_id(call)
    logs = download.experiment_logs(experiment_id)
    if logs is None:
        raise ApiError(500, "Failed to load experiment logs")
    return answer(logs)


def fork_experiment(call: Call) -> flask.Response:
    call.require("write")
    source_id = call.params["id"]
    body = call.body()
    source = download.experiment_document(source_id, raw=True)
    if source is None:
        raise ApiError(404, "Experiment not found")
    public = (source.get("permissions") or {}).get("visibility") == "public"
    if not public and (source.get("metadata") or {}).get("creator") != call.experimenter:
        raise ApiError(
            403,
            "Cannot fork this experiment. Only public experiments or your own experiments "
            "can be forked.",
        )
    template = access.template_of(source_id)
    metadata = dict(template["experiment"].get("metadata") or {})
    given = _string(body, "name") if body.get("name") is not None else ""
    metadata["name"] = given or f"Copy of {metadata.get('name') or 'Experiment'}"
    metadata["dateCreated"] = None
    fork_id = new_id()
    template["experiment"] = {**template["experiment"], "metadata": metadata}
    access.write(template, fork_id, call.experimenter)
    return answer({"experiment": _created(fork_id), "sourceExperimentId": source_id}, 201)
