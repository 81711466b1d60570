"""Writing an experiment from a Deliberate Lab template, and its cohorts: what Deliberate Lab's
writeExperiment and createCohort write. One implementation for the REST API
(functions/api/) and ``python -m tools.load_template``.
"""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from shared import paths
from shared.stages.unlock import initial_unlock_map
from shared.templates import (
    cohort_document,
    experiment_document,
    initial_public_data,
    mediator_document,
    new_id,
    persona_documents,
    prompt_documents,
    template_stages,
)

_BATCH_LIMIT = 400


class Writer:
    """Batched writes (Firestore allows 500 per batch), counted for the report."""

    def __init__(self, client: firestore.Client) -> None:
        self.client, self.batch, self.pending, self.count = client, client.batch(), 0, 0

    def set(self, path: str, data: dict[str, Any]) -> None:
        self.batch.set(self.client.document(path), data)
        self.pending += 1
        if self.pending >= _BATCH_LIMIT:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.batch.commit()
            self.count += self.pending
            self.batch, self.pending = self.client.batch(), 0


def write_experiment(
    client: firestore.Client, template: dict[str, Any], experiment_id: str, creator: str
) -> int:
    """Experiment, stages, personas and their prompts."""
    writer = Writer(client)
    e = {"experimentId": experiment_id}
    writer.set(
        paths.build(paths.EXPERIMENT, **e), experiment_document(template, experiment_id, creator)
    )
    for stage in template["stageConfigs"]:
        writer.set(paths.build(paths.STAGE, **e, stageId=stage["id"]), stage)
    patterns = {
        "agentParticipants": (paths.AGENT_PARTICIPANT_PERSONA, paths.AGENT_PARTICIPANT_PROMPT),
        "agentMediators": (paths.AGENT_MEDIATOR_PERSONA, paths.AGENT_MEDIATOR_PROMPT),
    }
    for collection, persona_id, doc in persona_documents(template):
        writer.set(paths.build(patterns[collection][0], **e, personaId=persona_id), doc)
    for collection, persona_id, stage_id, prompt in prompt_documents(template):
        path = paths.build(patterns[collection][1], **e, personaId=persona_id, stageId=stage_id)
        writer.set(path, prompt)
    writer.flush()
    return writer.count


def create_cohort(
    client: firestore.Client,
    template: dict[str, Any],
    experiment_id: str,
    name: str,
    **fields: Any,
) -> tuple[str, list[str], int]:
    """Cohort with its publicStageData and stageUnlockMap, plus default mediators; ``fields``:
    ``description``, ``participantConfig`` (merged over the experiment's default)."""
    writer = Writer(client)
    stages = template_stages(template)
    cohort_id = new_id()
    e = {"experimentId": experiment_id}
    experiment = client.document(paths.build(paths.EXPERIMENT, **e)).get().to_dict() or {}
    if fields.get("participantConfig"):
        default = experiment.get("defaultCohortConfig") or {}
        experiment["defaultCohortConfig"] = {**default, **fields["participantConfig"]}
    cohort = cohort_document(experiment, cohort_id, name, initial_unlock_map(stages))
    if fields.get("description") is not None:
        cohort["metadata"]["description"] = fields["description"]
    writer.set(paths.build(paths.COHORT, **e, cohortId=cohort_id), cohort)
    for data in initial_public_data(stages):
        path = paths.build(paths.PUBLIC_STAGE_DATA, **e, cohortId=cohort_id, stageId=data["id"])
        writer.set(path, data)
    mediator_ids = []
    prompts = prompt_documents(template)
    for collection, persona_id, persona in persona_documents(template):
        if collection == "agentMediators" and persona.get("isDefaultAddToCohort"):
            stage_ids = [s for c, p, s, _ in prompts if c == collection and p == persona_id]
            mediator = mediator_document(persona, cohort_id, stage_ids)
            writer.set(paths.build(paths.MEDIATOR, **e, mediatorId=mediator["privateId"]), mediator)
            mediator_ids.append(mediator["privateId"])
    writer.flush()
    return cohort_id, mediator_ids, writer.count
