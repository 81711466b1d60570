"""Agent stage transitions per second: N agents through a 10-stage non-chat experiment.

The experiment is the demo template without its chat (terms of service, info, profile, survey,
role, stock info, asset allocation, survey per participant, ranking, thanks: four stages answered
by the model, six not), with one cohort barrier: the survey per participant waits for everyone,
since each agent answers about all the others. Wall time runs from loading the template to the
last agent's ``timestamps.endExperiment`` (server-set, so polling does not blur it).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from bench.fake_model import scripted_model
from bench.profile import Profiler, delivery_profile
from bench.stack import Stack, dist, epoch, say
from tools.load_template import load

DEMO = Path(__file__).resolve().parents[1] / "templates" / "demo_all_stages.json"
SYNC_STAGE = "surveyPerParticipant"
POLL_S = 1.0


def template() -> dict[str, Any]:
    """The demo template minus its chat stage and mediator; the barrier on SYNC_STAGE only."""
    t = copy.deepcopy(json.loads(DEMO.read_text()))
    chats = {s["id"] for s in t["stageConfigs"] if s["kind"] in ("chat", "privateChat")}
    t["stageConfigs"] = [s for s in t["stageConfigs"] if s["id"] not in chats]
    t["experiment"]["stageIds"] = [s for s in t["experiment"]["stageIds"] if s not in chats]
    t["agentMediators"] = []
    for persona in t.get("agentParticipants", []):
        persona["promptMap"] = {
            k: v for k, v in persona.get("promptMap", {}).items() if k not in chats
        }
    for stage in t["stageConfigs"]:
        stage["progress"] = {
            **stage["progress"],
            "waitForAllParticipants": stage["id"] == SYNC_STAGE,
        }
    t["experiment"]["metadata"]["name"] = "Benchmark: 10 non-chat stages"
    return t


def _progress(db: firestore.Client, experiment_id: str) -> list[dict[str, Any]]:
    col = db.collection(f"experiments/{experiment_id}/participants")
    return [s.to_dict() or {} for s in col.select(["timestamps", "currentStatus"]).get()]


def _mirrored(db: firestore.Client, experiment_id: str, cohort_id: str) -> dict[str, int]:
    """Model answers mirrored into the cohort's publicStageData (survey, ranking), per stage:
    each should equal the number of agents; a failed onStageDataWritten leaves one out."""
    col = db.collection(f"experiments/{experiment_id}/cohorts/{cohort_id}/publicStageData")
    out = {}
    for snap in col.get():
        data = snap.to_dict() or {}
        if isinstance(data.get("participantAnswerMap"), dict):
            out[snap.id] = len(data["participantAnswerMap"])
    return out


def _stage_times(
    agents: list[dict[str, Any]], stage_ids: list[str], t0: float
) -> dict[str, dict[str, Any]]:
    """Per stage: seconds an agent spent on it (from the previous completion), and when the
    median agent completed it (seconds after loading)."""
    out = {}
    for i, stage_id in enumerate(stage_ids):
        spent, done_at = [], []
        for a in agents:
            completed = (a.get("timestamps") or {}).get("completedStages") or {}
            end = epoch(completed.get(stage_id))
            if end is None:
                continue
            prev = epoch(completed.get(stage_ids[i - 1])) if i else t0
            spent.append(end - (prev or t0))
            done_at.append(end - t0)
        out[stage_id] = {
            "secondsOnStage": dist(spent, 3),
            "medianCompletedAt": round(statistics.median(done_at), 2) if done_at else None,
        }
    return out


Run = tuple[int, int | None, bool, int | None]
"""(agents, workers or None for --workers, profiled, processes or None for --processes)."""


def _one(
    stack: Stack,
    agents: int,
    workers: int,
    processes: int,
    seed: int,
    profiled: bool,
    timeout: float,
) -> dict[str, Any]:
    t = template()
    stage_ids = t["experiment"]["stageIds"]
    kinds = {s["id"]: s["kind"] for s in t["stageConfigs"]}
    label = f"{agents} agents, {workers} workers, {processes} processes" + (
        ", profiled" if profiled else ""
    )
    say(f"transitions: {label}: {len(stage_ids)} stages")
    profiler = Profiler() if profiled else None
    with contextlib.ExitStack() as scope:
        if profiler:
            scope.enter_context(profiler)
        rt = scope.enter_context(
            stack.runtime(
                f"transitions-{agents}-{workers}-{processes}",
                workers=workers,
                processes=processes,
            )
        )
        scope.enter_context(scripted_model())
        cpu = stack.cpu()  # from here: the worker processes' start-up (imports) is not the run's
        db = firestore.Client(project=rt.project)
        t0 = time.time()
        result = load(db, t, agents=agents, api_type="SCRIPTED", seed=seed)
        loaded = time.time() - t0
        total = agents * len(stage_ids)
        last_print, state, window = time.monotonic(), [], stack.cpu()
        while True:
            state = _progress(db, result.experiment_id)
            done = sum(len((a.get("timestamps") or {}).get("completedStages") or {}) for a in state)
            finished = sum(1 for a in state if (a.get("timestamps") or {}).get("endExperiment"))
            if finished == agents:
                break
            if time.time() - t0 > timeout:
                say(f"transitions: {label}: timed out after {timeout:.0f} s")
                break
            if time.monotonic() - last_print >= 5:
                share = window.stop()["machineShare"]
                window = stack.cpu()
                busy = ", ".join(f"{k} {v:.0%}" for k, v in share.items())
                say(
                    f"transitions: {label}: {done}/{total} stages, {finished} agents done "
                    f"(CPU of the machine: {busy})"
                )
                last_print = time.monotonic()
            time.sleep(POLL_S)
        ends = [epoch((a.get("timestamps") or {}).get("endExperiment")) for a in state]
        wall = max(e for e in ends if e is not None) - t0 if any(ends) else None
        rt.wait_until_idle(timeout=600)
        cpu.sample()  # the worker processes, before they stop with the runtime
        records = rt.deliveries
        base = f"experiments/{result.experiment_id}"
        logs = [
            s.to_dict() or {} for s in db.collection(f"{base}/logs").select(["latencyMs"]).get()
        ]
        errors = len(list(db.collection(f"{base}/errors").select([]).get()))
        mirrored = _mirrored(db, result.experiment_id, result.cohort_id or "")
        rt.reset()
        db.close()
    transitions = sum(len((a.get("timestamps") or {}).get("completedStages") or {}) for a in state)
    deliveries = delivery_profile(records)
    out: dict[str, Any] = {
        "agents": agents,
        "workers": workers,
        "processes": processes,
        "loadAverage": [round(x, 2) for x in os.getloadavg()],
        "stages": len(stage_ids),
        "profiled": profiled,
        "finished": sum(1 for e in ends if e is not None),
        "transitions": transitions,
        "loadSeconds": round(loaded, 2),
        "wallSeconds": round(wall, 2) if wall else None,
        "transitionsPerSecond": round(transitions / wall, 1) if wall else None,
        "modelCalls": len(logs),
        "modelLatencyMs": dist([float(x.get("latencyMs") or 0) for x in logs], 1),
        "errorRecords": errors,
        "mirroredAnswers": mirrored,
        "functionInvocations": sum(v["deliveries"] for v in deliveries.values()),
        "stageTimes": {
            f"{s} ({kinds[s]})": v for s, v in _stage_times(state, stage_ids, t0).items()
        },
        "deliveries": deliveries,
        "cpu": cpu.stop(),
    }
    functions_cpu = out["cpu"]["cpuSeconds"]["python"] + out["cpu"]["cpuSeconds"]["workerProcesses"]
    out["pythonCpuMsPerTransition"] = (
        round(1000 * functions_cpu / transitions, 1) if transitions else None
    )
    if profiler:
        out["profile"] = profiler.report(deliveries)
    say(
        f"transitions: {label}: {out['finished']}/{agents} done in {out['wallSeconds']} s, "
        f"{out['transitionsPerSecond']} transitions/s"
    )
    return out


def run(stack: Stack, runs: list[Run], seed: int, workers: int, processes: int) -> dict[str, Any]:
    """``runs``: see ``Run``. A profiled run is in-process whatever it says (the profiler
    patches the invoker of this process)."""
    rng = random.Random(seed)
    results = [
        _one(
            stack,
            agents,
            w or workers,
            0 if profiled else (processes if p is None else p),
            rng.randrange(2**31),
            profiled,
            timeout=480,
        )
        for agents, w, profiled, p in runs
    ]
    return {"template": "templates/demo_all_stages.json without its chat", "runs": results}
