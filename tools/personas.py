"""Generate agent personas as Deliberate Lab does, and make agents from them.

    python -m tools.personas generate --n 5 --experiment EXPERIMENT_ID [--seed 7]
    python -m tools.personas generate --n 5 --out personas.json [--seed 7] [--start 6]
    python -m tools.personas add-agents --experiment EXPERIMENT_ID --cohort COHORT_ID
    python -m tools.personas bank --experiment EXPERIMENT_ID --file bank.json

``generate`` samples N personas' parameters (shared/personas: demographics from population
shares, Big Five traits spread by a seeded Halton sequence; the same seed and index always
draw the same person), asks the model for each one's sketch through the backbone's model call
(logged, counted against the run, answers checked and corrected), and writes them: as persona
documents ``experiments/{E}/agentParticipants/{personaId}``, or as template entries in a JSON
file (``{"agentParticipants": [...]}``) to add to a template's ``agentParticipants``.
``add-agents`` makes one agent participant per persona of an experiment, carrying the persona's
sketch as its ``agentConfig.promptContext`` and its model settings. Against the emulators
(FIRESTORE_EMULATOR_HOST), agents whose provider has no credentials answer with the scripted
model, as under ``make up``; ``generate``'s own ``--api-type`` must have its credentials (exit 2
otherwise), ``SCRIPTED`` asks for the scripted model. ``bank`` stores personas in the
experiment's persona bank (``experiments/{E}/personas``, Deliberate Lab's PR #1171), each once:
the file is ``{"personas": [{"variables": {...the round's resolved variables...}, "content":
"..."}]}``. A bad argument exits 2 on one line; any other failure ends the command at once,
with 1, saying why.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.api_core.exceptions import GoogleAPIError
from google.auth.exceptions import GoogleAuthError
from google.cloud import firestore

from emulator import model_choice
from functions import spend
from functions.agents import persona_bank
from functions.agents.model_call import AnswerFailed, CallSite, ask
from functions.agents.prompting import creator_api_keys
from shared import paths
from shared.llm import ModelError
from shared.models import AgentModelSettings, ApiType, Experiment, ParticipantProfile
from shared.models.participant import ProfileAgentConfig
from shared.personas import (
    SCHEMA,
    PersonaParams,
    Sketch,
    check_reply,
    entry,
    persona_id,
    persona_prompt,
)
from shared.personas import sample as sample_params
from shared.templates import agent_participant_document, persona_documents
from tools import cli

BATCHES = "personaBatches"
"""Where a batch written to a file keeps its model logs and totals: ``personaBatches/{id}``."""
GENERATION_CONFIG = {"temperature": 1.0}
"""Deliberate Lab generates personas at temperature 1 for variety."""
DEFAULT_MODEL = AgentModelSettings(api_type=ApiType.GEMINI, model_name="gemini-2.5-flash")


class PersonaError(Exception):
    """Why a command cannot go on (no such experiment, personas already there, ...)."""


class Target:
    """Where the logs and totals of a batch's model calls go: the experiment's own (its
    budget and its creator's keys apply), or a batch document of their own."""

    def __init__(self, db: firestore.Client, experiment_id: str | None) -> None:
        self.db = db
        self.experiment_id = experiment_id or ""
        self.batch = "" if experiment_id else uuid.uuid4().hex[:12]
        self.api_keys: dict[str, Any] | None = None
        if experiment_id:
            self.api_keys = creator_api_keys(read_experiment(db, experiment_id))

    @property
    def run(self) -> str:
        if self.experiment_id:
            return paths.build(paths.EXPERIMENT, experimentId=self.experiment_id)
        return f"{BATCHES}/{self.batch}"

    def site(self, params: PersonaParams, settings: AgentModelSettings) -> CallSite:
        """The call is filed under the persona being written, as its own agent."""
        pid = persona_id(params.seed, params.index)
        writer = ParticipantProfile(
            private_id=pid,
            public_id=pid,
            agent_config=ProfileAgentConfig(agent_id=pid, model_settings=settings),
        )
        return CallSite(
            self.experiment_id,
            writer,
            "personas",
            "persona generation",
            log_collection="" if self.experiment_id else f"{self.run}/logs",
            run=self.run,
        )


def read_experiment(db: firestore.Client, experiment_id: str) -> Experiment:
    path = paths.build(paths.EXPERIMENT, experimentId=experiment_id)
    data = db.document(path).get().to_dict()
    if data is None:
        raise PersonaError(f"no experiment {path}")
    return Experiment.model_validate({"id": experiment_id, **data})


def write_sketch(target: Target, params: PersonaParams, settings: AgentModelSettings) -> Sketch:
    """One model conversation: the prompt, then corrective turns until the answer checks."""
    sketch: Sketch = ask(
        target.site(params, settings),
        persona_prompt(params),
        SCHEMA,
        lambda reply: check_reply(params, reply),
        generation_config=GENERATION_CONFIG,
        api_keys=target.api_keys,
    )
    return sketch


def generate(
    target: Target, params: Sequence[PersonaParams], settings: AgentModelSettings
) -> list[dict[str, Any]]:
    """The template entries of ``params``, each sketched by the model (all or none)."""
    return [entry(p, write_sketch(target, p, settings), settings) for p in params]


def persona_path(experiment_id: str, pid: str) -> str:
    return paths.build(paths.AGENT_PARTICIPANT_PERSONA, experimentId=experiment_id, personaId=pid)


def refuse_existing(db: firestore.Client, experiment_id: str, ids: list[str]) -> None:
    """Before any model call: a persona id already in the experiment is not overwritten."""
    refs = [db.document(persona_path(experiment_id, i)) for i in ids]
    taken = sorted(s.id for s in db.get_all(refs) if s.exists)
    if taken:
        raise PersonaError(
            f"experiment {experiment_id} already has {', '.join(taken)}: "
            "pass another --seed, or --start after the last index used"
        )


def write_personas(db: firestore.Client, experiment_id: str, entries: list[dict[str, Any]]) -> int:
    """The persona documents, as a template's loading writes them, in one batch."""
    batch = db.batch()
    documents = persona_documents({"agentParticipants": entries})
    for _, pid, document in documents:
        batch.set(db.document(persona_path(experiment_id, pid)), document)
    batch.commit()
    return len(documents)


def write_file(out: Path, entries: list[dict[str, Any]]) -> None:
    out.write_text(json.dumps({"agentParticipants": entries}, indent=2, ensure_ascii=False) + "\n")


def add_agents(
    db: firestore.Client,
    experiment_id: str,
    cohort_id: str,
    persona_ids: Sequence[str] = (),
    seed: int | None = None,
) -> list[str]:
    """One agent participant per persona (every one of the experiment's, or those named), at
    the first stage, as Deliberate Lab makes an agent from a persona."""
    experiment = read_experiment(db, experiment_id)
    if not experiment.stage_ids:
        raise PersonaError(f"experiment {experiment_id} has no stages")
    cohort = paths.build(paths.COHORT, experimentId=experiment_id, cohortId=cohort_id)
    if not db.document(cohort).get().exists:
        raise PersonaError(f"no cohort {cohort}")
    personas = _personas(db, experiment_id, persona_ids)
    rng = random.Random(seed)
    batch, ids = db.batch(), []
    for persona in personas:
        doc = agent_participant_document(
            cohort_id=cohort_id,
            first_stage_id=experiment.stage_ids[0],
            persona=persona,
            model_settings=persona.get("defaultModelSettings") or {},
            rng=rng,
        )
        path = paths.build(
            paths.PARTICIPANT, experimentId=experiment_id, participantId=doc["privateId"]
        )
        batch.set(db.document(path), doc)
        ids.append(doc["privateId"])
    batch.commit()
    return ids


def _personas(
    db: firestore.Client, experiment_id: str, persona_ids: Sequence[str]
) -> list[dict[str, Any]]:
    collection = paths.collection_of(
        paths.AGENT_PARTICIPANT_PERSONA, experimentId=experiment_id, personaId="x"
    )
    if not persona_ids:
        found = [s.to_dict() or {} for s in db.collection(collection).get()]
        if not found:
            raise PersonaError(f"no personas in {collection}")
        return found
    snaps = db.get_all([db.document(persona_path(experiment_id, i)) for i in persona_ids])
    by_id = {s.id: s.to_dict() or {} for s in snaps if s.exists}
    missing = [i for i in persona_ids if i not in by_id]
    if missing:
        raise PersonaError(f"no persona {', '.join(missing)} in {collection}")
    return [by_id[i] for i in persona_ids]


def local_model_default(api_type: str | None) -> None:
    """Against the emulators, providers without credentials answer with the scripted model
    (as ``make up`` sets it for the functions); a DLAB_MODEL_OVERRIDE already set is kept. The
    provider the command itself calls (``api_type``) must have its credentials: it is never
    switched to the scripted model behind the caller's back (``--api-type SCRIPTED`` asks
    for it)."""
    if not os.environ.get("FIRESTORE_EMULATOR_HOST") or os.environ.get("DLAB_MODEL_OVERRIDE"):
        return
    chosen = model_choice.override(None, os.environ)
    if api_type is not None and model_choice.runs_on(api_type, chosen) != api_type:
        needed = " or ".join(model_choice.KEY_VARS.get(ApiType(api_type), ()))
        raise PersonaError(
            f"--api-type {api_type} has no credentials here (set {needed or 'its key'}); "
            f"--api-type {ApiType.SCRIPTED.value} runs the offline scripted model"
        )
    if chosen:
        os.environ["DLAB_MODEL_OVERRIDE"] = chosen


PROG = "python -m tools.personas"
MAX_PERSONAS = 1000
"""The most personas one command writes: each is a model conversation, all held until the
last one is written."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="sample N personas and have the model write them")
    gen.add_argument(
        "--n", type=cli.bounded(1, MAX_PERSONAS), required=True, help="how many personas"
    )
    where = gen.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--experiment",
        type=cli.document_id,
        help="write agentParticipants/{personaId} documents here",
    )
    where.add_argument("--out", type=Path, help="write template entries to this JSON file")
    gen.add_argument("--seed", type=int, help="sampling seed (default: a random one, printed)")
    gen.add_argument(
        "--start", type=cli.bounded(1, 10**9), default=1, help="first Halton index (default 1)"
    )
    gen.add_argument(
        "--api-type", default=str(DEFAULT_MODEL.api_type), choices=[t.value for t in ApiType]
    )
    gen.add_argument("--model", default=DEFAULT_MODEL.model_name, help="model name")
    add = sub.add_parser("add-agents", help="one agent participant per persona")
    add.add_argument("--experiment", required=True, type=cli.document_id)
    add.add_argument("--cohort", required=True, type=cli.document_id)
    add.add_argument(
        "--persona",
        action="append",
        default=[],
        type=cli.document_id,
        help="persona id (repeatable)",
    )
    bank = sub.add_parser("bank", help="store personas in the experiment's persona bank")
    bank.add_argument("--experiment", required=True, type=cli.document_id)
    bank.add_argument("--file", type=Path, required=True, help='{"personas": [...]}')
    return parser.parse_args(argv)


def store_bank(experiment_id: str, path: Path) -> list[tuple[str, bool]]:
    """Store each persona of the file once; (id, stored now) for each."""
    try:
        entries = json.loads(path.read_text())["personas"]
    except (ValueError, KeyError, TypeError) as error:
        raise PersonaError(f'{path}: not a {{"personas": [...]}} file: {error}') from None
    out = []
    for i, item in enumerate(entries):
        variables, content = item.get("variables"), item.get("content")
        if not isinstance(variables, dict) or not isinstance(content, str) or not content:
            raise PersonaError(f"{path}: personas[{i}] needs an object 'variables' and a 'content'")
        rest = {k: v for k, v in item.items() if k not in ("variables", "content")}
        out.append(persona_bank.store_persona(experiment_id, variables, content, **rest))
    return out


def _generate(db: firestore.Client, args: argparse.Namespace) -> None:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    params = sample_params(args.n, seed, start=args.start)
    settings = AgentModelSettings(api_type=args.api_type, model_name=args.model)
    if args.experiment:
        refuse_existing(db, args.experiment, [persona_id(p.seed, p.index) for p in params])
    elif not args.out.parent.is_dir():  # found out before the model calls, not after
        raise PersonaError(f"no directory {args.out.parent} for {args.out}")
    target = Target(db, args.experiment)
    print(f"seed {seed}, personas {args.start}..{args.start + args.n - 1}, logs in {target.run}")
    if target.batch:
        db.document(target.run).set(
            {"seed": seed, "start": args.start, "n": args.n, "model": settings.to_firestore()}
        )
    entries = generate(target, params, settings)
    for e in entries:
        print(f"{e['persona']['id']}  {e['persona']['name']}")
    if args.experiment:
        count = write_personas(db, args.experiment, entries)
        print(f"{count} personas written to experiments/{args.experiment}/agentParticipants")
    else:
        write_file(args.out, entries)
        print(f"{len(entries)} personas written to {args.out}")


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if not args.project:
        return cli.usage_error(PROG, "no project: pass --project or set GOOGLE_CLOUD_PROJECT")
    os.environ["GOOGLE_CLOUD_PROJECT"] = args.project  # the model call's logs go there too
    try:
        local_model_default(args.api_type if args.command == "generate" else None)
    except PersonaError as error:
        return cli.usage_error(PROG, str(error))
    try:
        db = firestore.Client(project=args.project)
        if args.command == "generate":
            _generate(db, args)
        elif args.command == "bank":
            for pid, stored in store_bank(args.experiment, args.file):
                print(f"{'stored' if stored else 'present'}     personas/{pid}")
        else:
            for pid in add_agents(db, args.experiment, args.cohort, args.persona):
                print(f"agent       experiments/{args.experiment}/participants/{pid}")
    except (
        PersonaError,
        ModelError,
        AnswerFailed,
        spend.BudgetReached,
        GoogleAuthError,
        GoogleAPIError,
        OSError,
    ) as error:
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
