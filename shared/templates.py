"""Deliberate Lab experiment templates: validation against the published schema, and the
documents a template and a new cohort turn into (pure: no Firestore here)."""

from __future__ import annotations

import functools
import json
import random
import uuid
from pathlib import Path
from typing import Any

import jsonschema

from shared.errors import BadInput
from shared.models import (
    AgentModelSettings,
    AgentPersona,
    AssetAllocationPublicData,
    ChatPublicData,
    ChatStage,
    CohortConfig,
    CohortParticipantConfig,
    Experiment,
    MediatorProfile,
    ParticipantProfile,
    ProfileAgentConfig,
    RankingPublicData,
    RolePublicData,
    StageConfig,
    SurveyPublicData,
    now,
    parse_stage,
)
from shared.models.experiment import repeated_stage

SCHEMA_PATH = Path(__file__).parent / "schemas" / "deliberate-lab-schemas.json"


class TemplateError(BadInput, ValueError):
    """A template that does not validate; the message lists each problem with its JSON path."""


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    # Deliberate Lab's PR #1171 (not merged): a transfer names the round of the treatment
    # variables from it on (docs/AGENTS.md, treatment roles).
    transfer = schema["$defs"]["TransferStageConfig"]["properties"]
    transfer["treatmentIndex"] = {"type": "integer", "minimum": 0}
    return jsonschema.Draft202012Validator(schema)


def validate_template(template: dict[str, Any], max_errors: int = 10) -> None:
    wrapped = {
        "experimentCreation": {"collectionName": "experiments", "experimentTemplate": template}
    }
    errors = sorted(_validator().iter_errors(wrapped), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for error in errors[:max_errors]:
            where = "/".join(str(p) for p in error.absolute_path)
            where = where.removeprefix("experimentCreation/experimentTemplate/") or "(template)"
            lines.append(f"  {where}: {error.message[:300]}")
        more = f"\n  ... and {len(errors) - max_errors} more" if len(errors) > max_errors else ""
        raise TemplateError(
            "template does not match Deliberate Lab's schema:\n" + "\n".join(lines) + more
        )
    configs = [str(s.get("id")) for s in template["stageConfigs"]]
    for where, ids in (
        ("experiment/stageIds", template["experiment"].get("stageIds")),
        ("stageConfigs", configs),
    ):
        problem = repeated_stage(list(ids or []))
        if problem:
            raise TemplateError(f"{where}: {problem}")


def new_id() -> str:
    return str(uuid.uuid4())


def template_stages(template: dict[str, Any]) -> list[StageConfig]:
    return [parse_stage(f"stageConfigs[{i}]", s) for i, s in enumerate(template["stageConfigs"])]


def experiment_document(
    template: dict[str, Any], experiment_id: str, creator: str
) -> dict[str, Any]:
    experiment = Experiment.model_validate({**template["experiment"], "id": experiment_id})
    stamp = now()
    experiment.metadata.creator = creator
    experiment.metadata.date_created = experiment.metadata.date_created or stamp
    experiment.metadata.date_modified = stamp
    return experiment.to_firestore()


ENTRY_FIELDS = ("promptContext", "generation")
"""Fields of ours on a template's persona entry, beside ``persona`` (whose schema admits no
others), kept on the persona document: a generated persona's sketch and what it was drawn from
(shared/personas)."""


def persona_documents(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(collection, persona id, document) for each persona, with DL's defaults for the fields the
    schema leaves out (mediators join cohorts by default, participants do not)."""
    out = []
    for collection, kind in (("agentParticipants", "participant"), ("agentMediators", "mediator")):
        for entry in template.get(collection, []):
            ours = {k: entry[k] for k in ENTRY_FIELDS if k in entry}
            persona = AgentPersona.model_validate(
                {
                    "type": kind,
                    "isDefaultAddToCohort": kind == "mediator",
                    **entry["persona"],
                    **ours,
                }
            )
            out.append((collection, persona.id, persona.to_firestore()))
    return out


def prompt_documents(template: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(collection, persona id, stage id, prompt config) for each persona's per-stage prompt."""
    out = []
    for collection in ("agentParticipants", "agentMediators"):
        for entry in template.get(collection, []):
            for stage_id, prompt in (entry.get("promptMap") or {}).items():
                out.append((collection, entry["persona"]["id"], stage_id, prompt))
    return out


def initial_public_data(stages: list[StageConfig]) -> list[dict[str, Any]]:
    """Deliberate Lab's createPublicDataFromStageConfigs for the kinds we model."""
    out: list[dict[str, Any]] = []
    for stage in stages:
        if isinstance(stage, ChatStage):
            first = stage.discussions[0].id if stage.discussions else None
            out.append(ChatPublicData(id=stage.id, current_discussion_id=first).to_firestore())
        elif stage.kind in _PUBLIC_DATA:
            out.append(_PUBLIC_DATA[stage.kind](id=stage.id).to_firestore())
    return out


_PUBLIC_DATA = {
    "survey": SurveyPublicData,
    "ranking": RankingPublicData,
    "role": RolePublicData,
    "assetAllocation": AssetAllocationPublicData,
}


def cohort_document(
    experiment: dict[str, Any], cohort_id: str, name: str, unlocked: dict[str, bool]
) -> dict[str, Any]:
    cohort = CohortConfig(
        id=cohort_id,
        participant_config=CohortParticipantConfig.model_validate(
            experiment.get("defaultCohortConfig") or {}
        ),
        stage_unlock_map=unlocked,
    )
    cohort.metadata.name = name
    cohort.metadata.creator = experiment.get("metadata", {}).get("creator", "")
    cohort.metadata.date_created = cohort.metadata.date_modified = now()
    return cohort.to_firestore()


def mediator_document(
    persona: dict[str, Any], cohort_id: str, prompt_stage_ids: list[str]
) -> dict[str, Any]:
    private_id = new_id()
    profile = persona.get("defaultProfile") or {}
    return MediatorProfile(
        private_id=private_id,
        public_id=private_id[:8],
        name=profile.get("name"),
        avatar=profile.get("avatar"),
        pronouns=profile.get("pronouns"),
        current_cohort_id=cohort_id,
        active_stage_map=dict.fromkeys(prompt_stage_ids, True),
        agent_config=ProfileAgentConfig(
            agent_id=persona["id"],
            model_settings=AgentModelSettings.model_validate(
                persona.get("defaultModelSettings") or {}
            ),
        ),
    ).to_firestore()


_ANIMALS = ["cat", "dog", "fox", "owl", "bee", "elk", "yak", "koi", "emu", "ant", "bat", "cod"]
_COLORS = ["red", "blue", "green", "gold", "teal", "pink", "gray", "plum", "jade", "rust"]


def public_id(rng: random.Random) -> str:
    """Deliberate Lab's ``{animal}-{color}-{number}`` public id."""
    return f"{rng.choice(_ANIMALS)}-{rng.choice(_COLORS)}-{rng.randrange(10000):04d}"


def agent_participant_document(
    *,
    cohort_id: str,
    first_stage_id: str,
    persona: dict[str, Any] | None,
    model_settings: dict[str, Any],
    rng: random.Random,
    prompt_context: str = "",
) -> dict[str, Any]:
    profile = (persona or {}).get("defaultProfile") or {}
    return ParticipantProfile(
        private_id=new_id(),
        public_id=public_id(rng),
        name=profile.get("name"),
        avatar=profile.get("avatar"),
        pronouns=profile.get("pronouns"),
        current_stage_id=first_stage_id,
        current_cohort_id=cohort_id,
        connected=True,
        agent_config=ProfileAgentConfig(
            agent_id=(persona or {}).get("id", ""),
            # DL copies a persona's promptContext into each agent made from it
            prompt_context=prompt_context or str((persona or {}).get("promptContext") or ""),
            model_settings=AgentModelSettings.model_validate(model_settings),
        ),
    ).to_firestore()
