"""The hierarchical debate against all-to-all debate (issue 15), on the real stack: the same
leaf agents, rounds and data, run as a debate document each; tokens (cl100k, prompts and
replies) and model calls from the statements and model logs. Then the wall time of a 32-agent,
2-layer, 2-round debate on the fixed-latency fake model against the sum of its model latencies.

python -m bench --only debate
"""

from __future__ import annotations

import random
import time
from typing import Any

from google.cloud import firestore

from bench.fake_model import API_TYPE, fake_model, scripted_model
from bench.stack import Stack, say
from tools.debate import state as debate_state

FAKE_LATENCY_S = 0.3
_SOURCES = ("Reuters", "Bloomberg", "Company filing", "BLS", "Reddit", "X (Twitter)")
_RELIABILITY = ("high", "medium", "low")


def entry(rng: random.Random, i: int, category: str, signal: str = "") -> dict[str, Any]:
    """One data entry of about 60 tokens (a leaf agent's worth at a 100-token limit);
    ``signal``: a word the reading model takes as evidence (``bullish``, ``bearish``)."""
    comment = f"a {signal} comment" if signal else "a comment"
    return {
        "source": rng.choice(_SOURCES),
        "date": f"2025-05-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00Z",
        "reliability": rng.choice(_RELIABILITY),
        "category": category,
        "data": f"Item {i}: NVIDIA-related news with a figure of {rng.randint(1, 99)}% and "
        f"{comment} on demand, supply, rates or sentiment that matters for the next days.",
    }


def data(agents: int, seed: int) -> list[dict[str, Any]]:
    """One entry per leaf agent, pre-categorized into ``max(2, agents // 8)`` categories of
    equal size."""
    rng = random.Random(seed)
    categories = max(2, agents // 8)
    return [entry(rng, i, f"Topic{i % categories}") for i in range(agents)]


def settings(agents: int, mode: str, seed: int, api_type: str = "SCRIPTED") -> dict[str, Any]:
    return {
        "name": f"B{agents}",
        "data": data(agents, seed),
        "numRounds": 2,
        "numLayers": 2,
        "tokenLimit": 100,
        "seed": seed,
        "mode": mode,
        "model": {"apiType": api_type, "modelName": "bench"},
    }


def wait(rt: Any, db: firestore.Client, debate_id: str, timeout: float) -> debate_state.DebateState:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s = debate_state.read(db, debate_id)
        if s.done:
            return s
        time.sleep(0.5)
    raise TimeoutError(f"debate {debate_id} not done after {timeout} s")


def figures(s: debate_state.DebateState, seconds: float) -> dict[str, Any]:
    return {
        "leafAgents": sum(1 for a in s.agents if a.role == "leaf"),
        "statements": len(s.statements),
        "modelCalls": s.model_calls,
        "promptTokens": sum(x.prompt_tokens for x in s.statements),
        "maxPromptTokens": max((x.prompt_tokens for x in s.statements), default=0),
        "completionTokens": sum(x.completion_tokens for x in s.statements),
        "tokens": s.tokens,
        "layers": len(s.layers),
        "clusters": len(s.clusters),
        "decision": (s.debate.decision or {}).get("conclusion"),
        "seconds": round(seconds, 1),
        "errors": len(s.errors),
    }


def _one(stack: Stack, agents: int, mode: str, seed: int, workers: int) -> dict[str, Any]:
    say(f"debate: {agents} leaf agents, {mode}")
    with (
        stack.runtime(f"debate-{agents}-{mode.replace('_', '-')}", workers=workers) as rt,
        scripted_model(),
    ):
        db = firestore.Client(project=rt.project)
        t0 = time.monotonic()
        db.document("debates/b").set(settings(agents, mode, seed))
        s = wait(rt, db, "b", timeout=1800)
        measured = figures(s, time.monotonic() - t0)
    say(f"  {measured['modelCalls']} calls, {measured['tokens']:,} tokens, {measured['seconds']} s")
    return measured


def _parallel(stack: Stack, agents: int, seed: int, workers: int) -> dict[str, Any]:
    """Wall time against the sum of model latencies (the model logs' latencyMs)."""
    say(f"debate: {agents} leaf agents on the {FAKE_LATENCY_S * 1000:.0f} ms fake model")
    with stack.runtime(f"debate-fake-{agents}", workers=workers) as rt:
        db = firestore.Client(project=rt.project)
        with fake_model(FAKE_LATENCY_S, seed):
            t0 = time.monotonic()
            db.document("debates/f").set(settings(agents, "hierarchical", seed, API_TYPE))
            s = wait(rt, db, "f", timeout=1800)
            wall = time.monotonic() - t0
        latencies = [
            (snap.to_dict() or {}).get("latencyMs", 0.0)
            for snap in db.collection("debates/f/logs").stream()
        ]
    total = sum(latencies) / 1000
    sequential_steps = 2 * (1 + 2 + 1)  # per layer: openings, 2 rounds, synthesis
    result = {
        **figures(s, wall),
        "workers": workers,
        "wallSeconds": round(wall, 1),
        "modelLatencySumSeconds": round(total, 1),
        "parallelism": round(total / wall, 1) if wall else None,
        "criticalPathModelSeconds": round(sequential_steps * FAKE_LATENCY_S, 1),
    }
    say(f"  wall {wall:.1f} s, model latencies {total:.1f} s, x{result['parallelism']}")
    return result


def run(
    stack: Stack, agents: tuple[int, ...], parallel_agents: int, seed: int, workers: int
) -> dict[str, Any]:
    runs = []
    for n in agents:
        pair = {m: _one(stack, n, m, seed, workers) for m in ("hierarchical", "all_to_all")}
        h, a = pair["hierarchical"], pair["all_to_all"]
        runs.append(
            {
                "leafAgents": n,
                "hierarchical": h,
                "allToAll": a,
                "tokenSaving": round(1 - h["tokens"] / a["tokens"], 3) if a["tokens"] else None,
                "callRatio": round(h["modelCalls"] / a["modelCalls"], 3)
                if a["modelCalls"]
                else None,
            }
        )
    return {"runs": runs, "parallel": _parallel(stack, parallel_agents, seed, max(workers, 32))}


def summary(section: dict[str, Any]) -> str:
    lines = [
        "Hierarchical vs all-to-all debate (2 layers, 2 rounds, scripted model)",
        "  leaf agents | hierarchical calls / tokens | all-to-all calls / tokens | tokens saved",
    ]
    for r in section["runs"]:
        h, a = r["hierarchical"], r["allToAll"]
        lines.append(
            f"  {r['leafAgents']:11d} | {h['modelCalls']:5d} / {h['tokens']:>11,} | "
            f"{a['modelCalls']:5d} / {a['tokens']:>11,} | {r['tokenSaving']:.1%}"
        )
    p = section["parallel"]
    lines.append(
        f"  {p['leafAgents']} agents on a {FAKE_LATENCY_S * 1000:.0f} ms model: wall "
        f"{p['wallSeconds']} s, sum of model latencies {p['modelLatencySumSeconds']} s "
        f"(x{p['parallelism']} in parallel; {p['modelCalls']} calls, {p['workers']} workers)"
    )
    return "\n".join(lines)
