"""The local demo: load a template, add agent participants, and show them move live."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from emulator.chaos import ChaosSettings
from emulator.runtime import LocalRuntime
from functions.registry import REGISTRY
from shared.models import ErrorRecord, ModelLogEntry, ParticipantProfile, ParticipantStatus
from shared.stages import ANSWER_SPECS
from tools.load_template import load

DEFAULT_TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "demo_all_stages.json"
_BAR = 20


def _bar(done: int, total: int) -> str:
    filled = round(_BAR * done / total) if total else _BAR
    return "█" * filled + "░" * (_BAR - filled)


def _label(p: ParticipantProfile) -> str:
    who = f"{p.avatar or ''} {p.name or ''}".strip()
    return f"{p.public_id:<16} {who:<12}"


class ChatFeed:
    """Prints the cohort's chat messages as they appear (polling the chat collections)."""

    def __init__(self, db: firestore.Client, experiment_id: str, cohort_id: str, chats: list[str]):
        base = f"experiments/{experiment_id}/cohorts/{cohort_id}/publicStageData"
        self.collections = [db.collection(f"{base}/{stage_id}/chats") for stage_id in chats]
        self.seen: set[str] = set()

    def print_new(self, started: float) -> None:
        for col in self.collections:
            for snap in col.order_by("timestamp").get():
                if snap.id in self.seen:
                    continue
                self.seen.add(snap.id)
                m = snap.to_dict() or {}
                text = " ".join(str(m.get("message", "")).split())
                text = text if len(text) <= 110 else text[:107] + "..."
                thread = f"[{m['discussionId']}] " if m.get("discussionId") else ""
                if m.get("type") == "system":
                    who = "⚙ "
                else:
                    profile = m.get("profile") or {}
                    name = profile.get("name") or m.get("senderId")
                    who = f"💬 {profile.get('avatar') or ''} {name}:"
                elapsed = time.monotonic() - started
                print(f"[{elapsed:6.1f}s]     {thread}{who} {text}", flush=True)


def _print_completed(
    p: ParticipantProfile, done: set[str], stages: dict[str, str], started: float
) -> None:
    """One line for each stage ``p`` completed that is not in ``done`` yet (added to it)."""
    completed = p.timestamps.completed_stages
    for stage_id in sorted(set(completed) - done, key=lambda s: completed[s]):
        done.add(stage_id)
        kind = stages.get(stage_id, "?")
        how = "answered by the model" if kind in ANSWER_SPECS else "no model call"
        finished = "  → SUCCESS" if p.timestamps.end_experiment and done >= set(completed) else ""
        print(
            f"[{time.monotonic() - started:6.1f}s] {_label(p)} "
            f"{_bar(len(done), len(stages))} {len(done):>2}/{len(stages)}  "
            f"✓ {stage_id} ({kind}, {how}){finished}",
            flush=True,
        )


def watch(
    db: firestore.Client,
    experiment_id: str,
    stages: dict[str, str],
    timeout: float,
    started: float,
    feed: ChatFeed | None = None,
) -> list[ParticipantProfile]:
    """Print every stage each agent completes, in order, until all are done or time is up.

    Completions are read from ``timestamps.completedStages``, so none is missed between polls.
    """
    col = db.collection(f"experiments/{experiment_id}/participants")
    shown: dict[str, set[str]] = {}
    deadline = time.monotonic() + timeout
    while True:
        if feed is not None:
            feed.print_new(started)
        agents = [ParticipantProfile.model_validate(s.to_dict()) for s in col.get()]
        for p in sorted(agents, key=lambda a: a.public_id):
            _print_completed(p, shown.setdefault(p.private_id, set()), stages, started)
        if agents and all(p.timestamps.end_experiment for p in agents):
            if feed is not None:
                feed.print_new(started)
            return agents
        if any(p.agent_blocked_on for p in agents):  # the run failed: no use waiting
            return agents
        if time.monotonic() > deadline:
            print(f"Timed out after {timeout:.0f}s: not every agent finished.")
            return agents
        time.sleep(0.1)


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


def blocked(db: firestore.Client, experiment_id: str, agents: list[ParticipantProfile]) -> int:
    """Print what stopped each blocked agent (its error record, or its mark if the record is
    gone); how many are blocked. An agent is blocked on a document it could not use, or after
    its move failed every attempt: a demo run with one has failed."""
    stopped = [p for p in agents if p.agent_blocked_on]
    for p in stopped:
        mark = p.agent_blocked_on or {}
        record = db.document(f"experiments/{experiment_id}/errors/{mark.get('errorId')}").get()
        if record.exists:
            e = ErrorRecord.model_validate(record.to_dict())
            text = f"{e.document} [{e.field}]: {e.reason}"
        else:
            text = f"{mark.get('document')} [{mark.get('field')}]: {mark.get('reason')}"
        print(f"FAILED: {_label(p).strip()} is blocked: {text}", flush=True)
    return len(stopped)


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


DEFAULT_MODELS = {
    "GEMINI": "gemini-2.5-flash",
    "OPENAI": "gpt-5-mini",
    "OLLAMA": "llama3.2",
    "CLAUDE": "claude-haiku-4-5-20251001",  # Deliberate Lab's default Claude model
}


def model_from_env(env: dict[str, str] | None = None) -> tuple[str, str | None]:
    """(apiType, modelName) for the demo: a real provider when its key or server is configured
    (GEMINI_API_KEY; OPENAI_API_KEY or OPENAI_BASE_URL; OLLAMA_BASE_URL; ANTHROPIC_API_KEY), else
    the offline scripted model. DLAB_DEMO_MODEL overrides the model name."""
    env = dict(os.environ) if env is None else env
    if env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY"):
        api_type = "GEMINI"
    elif env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        api_type = "OPENAI"
    elif env.get("OLLAMA_BASE_URL"):
        api_type = "OLLAMA"
    elif env.get("ANTHROPIC_API_KEY"):
        api_type = "CLAUDE"
    else:
        return "SCRIPTED", None
    return api_type, env.get("DLAB_DEMO_MODEL") or DEFAULT_MODELS[api_type]


def _demo_environment(api_type: str) -> None:
    if api_type == "SCRIPTED":  # mediators too (their personas name a real model)
        os.environ.setdefault("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    os.environ.setdefault("DLAB_IDLE_AGENT_SECONDS", "5")  # nudges quiet chat agents after 5 s


def run(
    template_path: Path = DEFAULT_TEMPLATE,
    agents: int = 3,
    mode: str = "concurrent",
    timeout: float = 180,
    api_type: str | None = None,
    model_name: str | None = None,
    chaos: ChaosSettings | None = None,
    processes: int = 0,
) -> int:
    if api_type is None:
        api_type, model_name = model_from_env()
    _demo_environment(api_type)
    started = time.monotonic()
    print("Starting the Firestore and Pub/Sub emulators and the functions runtime ...", flush=True)
    with LocalRuntime(mode=mode, tick_s=2.0, chaos=chaos, processes=processes) as runtime:
        print(
            f"  Firestore {runtime.firestore_host} · Pub/Sub {runtime.pubsub_host} · project "
            f"{runtime.project} · {len(REGISTRY)} functions · {mode} delivery · "
            f"{processes or 'no'} worker processes ({time.monotonic() - started:.1f}s)"
        )
        if runtime.chaos_run is not None and runtime.chaos_settings is not None:
            print(f"  {runtime.chaos_settings.describe()}")
        db = firestore.Client(project=runtime.project)
        template = json.loads(template_path.read_text())
        result = load(db, template, agents=agents, api_type=api_type, model_name=model_name, seed=0)
        stage_ids = template["experiment"]["stageIds"]
        kinds = {s["id"]: s["kind"] for s in template["stageConfigs"]}
        print(
            f"Loaded {template_path.name}: experiment {result.experiment_id}, "
            f"{len(stage_ids)} stages ({', '.join(stage_ids)}); "
            f"{agents} agent participants on {api_type} {model_name or ''}\n"
        )
        t0 = time.monotonic()
        chats = [s["id"] for s in template["stageConfigs"] if s["kind"] == "chat"]
        feed = ChatFeed(db, result.experiment_id, result.cohort_id or "", chats)
        finished = watch(db, result.experiment_id, kinds, timeout, t0, feed)
        if blocked(db, result.experiment_id, finished):
            print("The demo run failed (see above); stopping the emulators and the runtime.")
            return 1
        runtime.wait_until_idle(timeout=60)
        stats = summary(
            db, result.experiment_id, finished, time.monotonic() - t0, len(runtime.deliveries)
        )
        print_summary(stats)
        if runtime.chaos_run is not None:
            print(f"  chaos injected       {runtime.chaos_run.injected()}")
    print("Stopped the emulators and the runtime.")
    # under chaos, errors from the injected model faults are expected (and printed)
    clean = chaos is not None or not stats["errors"]
    return 0 if stats["succeeded"] == agents and clean else 1
