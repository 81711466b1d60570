"""The local demo: load a template, add agent participants, and show them move live."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from emulator.runtime import LocalRuntime
from functions.registry import REGISTRY
from shared.models import ErrorRecord, ModelLogEntry, ParticipantProfile, ParticipantStatus
from tools.load_template import load

DEFAULT_TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "demo_all_stages.json"
_BAR = 20


@dataclasses.dataclass
class _Seen:
    stage: str
    status: str


def _bar(done: int, total: int) -> str:
    filled = round(_BAR * done / total) if total else _BAR
    return "█" * filled + "░" * (_BAR - filled)


def _label(p: ParticipantProfile) -> str:
    who = f"{p.avatar or ''} {p.name or ''}".strip()
    return f"{p.public_id:<16} {who:<12}"


def watch(
    db: firestore.Client, experiment_id: str, stage_ids: list[str], timeout: float, started: float
) -> list[ParticipantProfile]:
    """Print each agent's stage transitions as they happen, until all are done or time is up."""
    col = db.collection(f"experiments/{experiment_id}/participants")
    seen: dict[str, _Seen] = {}
    names = {}
    deadline = time.monotonic() + timeout
    while True:
        agents = [ParticipantProfile.model_validate(s.to_dict()) for s in col.get()]
        for p in sorted(agents, key=lambda a: a.public_id):
            now = _Seen(p.current_stage_id, p.current_status)
            before = seen.get(p.private_id)
            if before != now or names.get(p.private_id) != p.name:
                done = len(p.timestamps.completed_stages)
                step = (
                    f"{before.stage} → {now.stage}"
                    if before and before.stage != now.stage
                    else now.stage
                )
                if p.current_status == ParticipantStatus.SUCCESS:
                    step = "finished ✔"
                elapsed = time.monotonic() - started
                print(
                    f"[{elapsed:6.1f}s] {_label(p)} {_bar(done, len(stage_ids))} "
                    f"{done:>2}/{len(stage_ids)}  {step}",
                    flush=True,
                )
                seen[p.private_id], names[p.private_id] = now, p.name
        if agents and all(p.timestamps.end_experiment for p in agents):
            return agents
        if time.monotonic() > deadline:
            print(f"Timed out after {timeout:.0f}s: not every agent finished.")
            return agents
        time.sleep(0.2)


def summary(
    db: firestore.Client,
    experiment_id: str,
    agents: list[ParticipantProfile],
    elapsed: float,
    deliveries: int,
) -> dict[str, Any]:
    base = f"experiments/{experiment_id}"
    logs = [ModelLogEntry.model_validate(s.to_dict()) for s in db.collection(f"{base}/logs").get()]
    errors = [
        ErrorRecord.model_validate(s.to_dict()) for s in db.collection(f"{base}/errors").get()
    ]
    return {
        "agents": len(agents),
        "succeeded": sum(p.current_status == ParticipantStatus.SUCCESS for p in agents),
        "stagesCompleted": sum(len(p.timestamps.completed_stages) for p in agents),
        "modelCalls": len(logs),
        "tokens": sum(log.response.usage.total_tokens for log in logs),
        "errors": [f"{e.document} [{e.field}]: {e.reason}" for e in errors],
        "functionInvocations": deliveries,
        "elapsedSeconds": round(elapsed, 2),
    }


def print_summary(s: dict[str, Any]) -> None:
    print("\nSummary")
    print(f"  agents               {s['agents']} ({s['succeeded']} reached SUCCESS)")
    print(f"  stages completed     {s['stagesCompleted']}")
    print(f"  model calls          {s['modelCalls']}")
    print(f"  tokens               {s['tokens']}")
    print(f"  function invocations {s['functionInvocations']}")
    print(f"  elapsed              {s['elapsedSeconds']} s")
    for error in s["errors"]:
        print(f"  error                {error}")


def run(
    template_path: Path = DEFAULT_TEMPLATE,
    agents: int = 3,
    mode: str = "concurrent",
    timeout: float = 180,
    api_type: str = "SCRIPTED",
) -> int:
    started = time.monotonic()
    print("Starting the Firestore and Pub/Sub emulators and the functions runtime ...", flush=True)
    with LocalRuntime(mode=mode) as runtime:
        print(
            f"  Firestore {runtime.firestore_host} · Pub/Sub {runtime.pubsub_host} · project "
            f"{runtime.project} · {len(REGISTRY)} functions · {mode} delivery "
            f"({time.monotonic() - started:.1f}s)"
        )
        db = firestore.Client(project=runtime.project)
        template = json.loads(template_path.read_text())
        result = load(db, template, agents=agents, api_type=api_type, seed=0)
        stage_ids = template["experiment"]["stageIds"]
        print(
            f"Loaded {template_path.name}: experiment {result.experiment_id}, "
            f"{len(stage_ids)} stages ({', '.join(stage_ids)}); "
            f"{agents} agent participants on the {api_type} model\n"
        )
        t0 = time.monotonic()
        finished = watch(db, result.experiment_id, stage_ids, timeout, t0)
        runtime.wait_until_idle(timeout=60)
        stats = summary(
            db, result.experiment_id, finished, time.monotonic() - t0, len(runtime.deliveries)
        )
        print_summary(stats)
    print("Stopped the emulators and the runtime.")
    return 0 if stats["succeeded"] == agents and not stats["errors"] else 1
