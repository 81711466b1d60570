"""Load a Deliberate Lab experiment template into Firestore, create a cohort, add agents.

    python -m tools.load_template templates/demo_all_stages.json --agents 3 --api-type SCRIPTED

Works against the emulator (FIRESTORE_EMULATOR_HOST) or a real project (application default
credentials). Writes what Deliberate Lab's writeExperiment and createCohort write.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

from google.cloud import firestore

from functions.experiment_writes import Writer, create_cohort, write_experiment
from shared import paths
from shared.models import AgentModelSettings, ApiType
from shared.templates import (
    TemplateError,
    agent_participant_document,
    new_id,
    persona_documents,
    validate_template,
)


@dataclasses.dataclass
class LoadResult:
    experiment_id: str
    cohort_id: str | None = None
    participant_ids: list[str] = dataclasses.field(default_factory=list)
    mediator_ids: list[str] = dataclasses.field(default_factory=list)
    documents_written: int = 0


def add_agent_participants(
    client: firestore.Client,
    template: dict[str, Any],
    experiment_id: str,
    cohort_id: str,
    count: int,
    *,
    persona_id: str | None = None,
    api_type: str | None = None,
    model_name: str | None = None,
    seed: int | None = None,
) -> list[str]:
    """``count`` agent participants at the first stage; the backend starts them on creation."""
    personas = {  # with the entries' own fields (a generated persona's promptContext)
        pid: doc for kind, pid, doc in persona_documents(template) if kind == "agentParticipants"
    }
    if persona_id and persona_id not in personas:
        raise TemplateError(f"no agent participant persona {persona_id!r}; have {sorted(personas)}")
    persona = personas.get(persona_id) if persona_id else next(iter(personas.values()), None)
    defaults = (persona or {}).get("defaultModelSettings") or {}
    overrides = {"apiType": api_type, "modelName": model_name}
    settings = AgentModelSettings.model_validate(
        {**defaults, **{k: v for k, v in overrides.items() if v}}
    )
    rng = random.Random(seed)
    writer = Writer(client)
    ids = []
    for _ in range(count):
        doc = agent_participant_document(
            cohort_id=cohort_id,
            first_stage_id=template["experiment"]["stageIds"][0],
            persona=persona,
            model_settings=settings.to_firestore(),
            rng=rng,
        )
        path = paths.build(
            paths.PARTICIPANT, experimentId=experiment_id, participantId=doc["privateId"]
        )
        writer.set(path, doc)
        ids.append(doc["privateId"])
    writer.flush()
    return ids


def load(
    client: firestore.Client,
    template: dict[str, Any],
    *,
    agents: int = 0,
    experiment_id: str | None = None,
    creator: str = "experimenter@example.com",
    cohort_name: str = "Cohort 1",
    persona_id: str | None = None,
    api_type: str | None = None,
    model_name: str | None = None,
    validate: bool = True,
    seed: int | None = None,
) -> LoadResult:
    if validate:
        validate_template(template)
    result = LoadResult(experiment_id=experiment_id or new_id())
    result.documents_written += write_experiment(client, template, result.experiment_id, creator)
    result.cohort_id, result.mediator_ids, written = create_cohort(
        client, template, result.experiment_id, cohort_name
    )
    result.documents_written += written
    if agents:
        result.participant_ids = add_agent_participants(
            client,
            template,
            result.experiment_id,
            result.cohort_id,
            agents,
            persona_id=persona_id,
            api_type=api_type,
            model_name=model_name,
            seed=seed,
        )
        result.documents_written += agents
    return result


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.load_template", description=__doc__.split("\n")[0]
    )
    parser.add_argument("template", type=Path, help="JSON file: a DL experimentTemplate")
    parser.add_argument(
        "--agents", type=int, default=0, help="agent participants to add (default 0)"
    )
    parser.add_argument("--persona", help="agent participant persona id (default: the first)")
    parser.add_argument(
        "--api-type", choices=[t.value for t in ApiType], help="override the persona's apiType"
    )
    parser.add_argument("--model", help="override the persona's modelName")
    parser.add_argument("--experiment-id", help="experiment document id (default: a new uuid)")
    parser.add_argument("--creator", default="experimenter@example.com", help="metadata.creator")
    parser.add_argument("--cohort-name", default="Cohort 1")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    parser.add_argument("--no-validate", action="store_true", help="skip the schema check")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        template = json.loads(args.template.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"error: cannot read {args.template}: {error}", file=sys.stderr)
        return 2
    if not args.project:
        print("error: no project: pass --project or set GOOGLE_CLOUD_PROJECT", file=sys.stderr)
        return 2
    where = os.environ.get("FIRESTORE_EMULATOR_HOST") or f"project {args.project} (live Firestore)"
    print(f"Loading {args.template} into {where} ...")
    try:
        result = load(
            firestore.Client(project=args.project),
            template,
            agents=args.agents,
            experiment_id=args.experiment_id,
            creator=args.creator,
            cohort_name=args.cohort_name,
            persona_id=args.persona,
            api_type=args.api_type,
            model_name=args.model,
            validate=not args.no_validate,
        )
    except TemplateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"experiment  experiments/{result.experiment_id}")
    print(f"cohort      experiments/{result.experiment_id}/cohorts/{result.cohort_id}")
    for pid in result.participant_ids:
        print(f"agent       experiments/{result.experiment_id}/participants/{pid}")
    for mid in result.mediator_ids:
        print(f"mediator    experiments/{result.experiment_id}/mediators/{mid}")
    print(f"{result.documents_written} documents written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
