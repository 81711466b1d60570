"""Conductor figures: the chat election policies compared at 10 agents (model calls per
message, including the conductor's call, and how often the picked agent declines), and
conductor workflows in parallel (time per conversation and per step).

The chat runs reuse the election benchmark's conversation (``bench.election``): a human message
starts it, the agents keep it going, after K messages the discussion is ended.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from bench import election
from bench.fake_model import scripted_model
from bench.stack import Stack, dist, say
from functions.chat.settings import chat_settings
from shared.conductor.documents import ACTIVE
from tools.load_workflow import load

EXAMPLE = Path(__file__).resolve().parents[1] / "workflows" / "example"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
CALLS_TARGET = 2.2


_KEPT = (
    "agents",
    "policy",
    "model",
    "messages",
    "decidedMessages",
    "modelCallsPerMessage",
    "modelCallsPerMessageCi95",
    "repliesPerMessage",
    "duplicates",
    "wallSeconds",
)


def _workflows(stack: Stack, conversations: int, workers: int) -> dict[str, Any]:
    say(f"conductor: {conversations} workflow conversations in parallel")
    with stack.runtime("conductor-workflows", workers=workers) as rt, scripted_model():
        db = firestore.Client(project=rt.project)
        load(db, EXAMPLE, "example")
        t0 = time.time()
        ids = [f"bench-{i:03d}" for i in range(conversations)]
        for cid in ids:
            db.document(f"conversations/{cid}").set(
                {"query": QUERY, "workflowId": "example", "status": "PENDING"}
            )
        while True:
            rt.wait_until_idle(timeout=300)
            docs = [db.document(f"conversations/{c}").get().to_dict() or {} for c in ids]
            if all(d.get("status") not in ACTIVE for d in docs):
                break
            rt.tick()
        wall = time.time() - t0
        seconds = [
            (d["updatedAt"] - d["createdAt"]).total_seconds()
            for d in docs
            if d.get("updatedAt") and d.get("createdAt")
        ]
        steps = sum(d.get("currentStep", 0) + 1 for d in docs)
        done = sum(1 for d in docs if d.get("status") == "DONE")
        deliveries = [r for r in rt.deliveries if r.function == "onConductorStep"]
        rt.reset()
        db.close()
    return {
        "conversations": conversations,
        "done": done,
        "steps": steps,
        "wallSeconds": round(wall, 2),
        "stepsPerSecond": round(steps / wall, 1) if wall else None,
        "conversationSeconds": dist(seconds, 2),
        "stepDeliveryMs": dist([r.duration_ms for r in deliveries], 1) if deliveries else None,
    }


def run(
    stack: Stack,
    agents: int,
    messages: dict[str, int],
    conversations: int,
    seed: int,
    workers: int,
) -> dict[str, Any]:
    rng = random.Random(seed)
    runs = []
    for policy in ("race", "claim", "conductor"):
        out = election._one(
            stack, agents, policy, messages[policy], workers=workers, fake=False, rng=rng
        )
        runs.append({key: out[key] for key in _KEPT if key in out} | _extra(out))
    return {
        "maxPicks": chat_settings().chat_conductor_max_picks,
        "maxPicksSetting": "DLAB_CHAT_CONDUCTOR_MAX_PICKS",
        "chat": runs,
        "workflows": _workflows(stack, conversations, workers),
    }


def _extra(out: dict[str, Any]) -> dict[str, Any]:
    keys = ("conductorCallsPerMessage", "pickedAgentAnswers", "pickedAgentDeclines", "declineRate")
    return {k: out[k] for k in keys if k in out}
