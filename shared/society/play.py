"""How the offline scripted model plays a society member: plausibly, deterministically.

It reads what the default context template shows (its id, resources, the posts and proposals)
and chooses: work when short of food or energy, otherwise vote on open proposals (its values
decide how), propose, post, reply, trade a surplus, message, name itself, or idle. The choice is
seeded by the agent and day, not by the attempt, so a re-prompt after a garbled reply (chaos)
chooses the same action and a run's outcome depends only on its seed.
"""

from __future__ import annotations

import random
import re
from typing import Any

_ID = re.compile(r"Agent ID: #(\d+)")
_RES = re.compile(r"Resources: Food: ([\d.]+), Energy: ([\d.]+), Materials: ([\d.]+)")
_AGENTS = re.compile(r"Active Agents: \d+/(\d+)")
_DAY = re.compile(r"CURRENT STATE \(Day (\d+)\)")
_POSTS = re.compile(r"^- \[#(\d+)\] day \d+, ", re.M)
_PROPOSALS = re.compile(r"^- \[#(\d+)\] .*? \((law|allocation|rule|infrastructure|other), by", re.M)
_VALUES = {
    "efficiency": "You value efficiency",
    "equality": "You value fairness",
    "freedom": "You value individual liberty",
    "stability": "You value order",
}
_NAMES = ["Ash", "Briar", "Cedar", "Dune", "Ember", "Fern", "Grove", "Harbor", "Iris", "Juniper"]
_TOPICS = {
    "efficiency": (
        "Work rotas",
        "We should assign work so that nobody farms when the pool is full.",
    ),
    "equality": ("Share the pool", "Every member in need should be fed from the common pool."),
    "freedom": ("No new rules", "Let every member decide how to spend their own hours."),
    "stability": ("Keep reserves", "We should keep a reserve of food in the common pool."),
    "neutral": ("Build a mill", "A shared mill would make every hour of work count for more."),
}
_PROPOSAL_TYPE = {
    "efficiency": "infrastructure",
    "equality": "allocation",
    "freedom": "rule",
    "stability": "law",
    "neutral": "infrastructure",
}
_SUPPORT = {
    "efficiency": {"infrastructure": 0.9, "allocation": 0.4, "law": 0.5, "rule": 0.5, "other": 0.5},
    "equality": {"infrastructure": 0.6, "allocation": 0.95, "law": 0.6, "rule": 0.5, "other": 0.5},
    "freedom": {"infrastructure": 0.6, "allocation": 0.4, "law": 0.2, "rule": 0.2, "other": 0.5},
    "stability": {"infrastructure": 0.5, "allocation": 0.6, "law": 0.7, "rule": 0.6, "other": 0.3},
    "neutral": {"infrastructure": 0.7, "allocation": 0.6, "law": 0.5, "rule": 0.5, "other": 0.5},
}


def _personality(prompt: str) -> str:
    return next((name for name, marker in _VALUES.items() if marker in prompt), "neutral")


def _int(pattern: re.Pattern[str], prompt: str, default: int) -> int:
    found = pattern.search(prompt)
    return int(found.group(1)) if found else default


def choose(prompt: str, seed: str) -> dict[str, Any]:
    """The action a member would take, as the reply's JSON object."""
    rng = random.Random(seed.rsplit(":", 1)[0])  # not the attempt: a re-prompt chooses the same
    me = _int(_ID, prompt, 1)
    agents = _int(_AGENTS, prompt, 100)
    day = _int(_DAY, prompt, 1)
    found = _RES.search(prompt)
    food, energy, materials = (float(x) for x in found.groups()) if found else (5.0, 5.0, 0.0)
    personality = _personality(prompt)
    if food < 3 or energy < 3:
        kind = "farm" if food <= energy else "generate"
        return {"action": "work", "work_type": kind, "hours": rng.randint(5, 8)}
    if day == 1 and rng.random() < 0.25:
        return {"action": "set_name", "display_name": f"{rng.choice(_NAMES)} {me}"}
    proposals = _PROPOSALS.findall(prompt)
    posts = [int(p) for p in _POSTS.findall(prompt)]
    roll = rng.random()
    if proposals and roll < 0.45:
        pid, kind = rng.choice(proposals[:3])  # the oldest open ones: votes gather on them
        support = _SUPPORT[personality][kind]
        vote = "yes" if rng.random() < support else rng.choice(["no", "no", "abstain"])
        return {"action": "vote", "proposal_id": int(pid), "vote": vote, "reasoning": personality}
    if roll < 0.60:
        kind = rng.choice(["farm", "generate", "gather", "gather"])
        return {"action": "work", "work_type": kind, "hours": rng.randint(2, 8)}
    return _social(rng, me, agents, personality, (food, energy, materials), posts, len(proposals))


def _social(
    rng: random.Random,
    me: int,
    agents: int,
    personality: str,
    stock: tuple[float, float, float],
    posts: list[int],
    open_proposals: int,
) -> dict[str, Any]:
    roll = rng.random()
    title, text = _TOPICS[personality]
    other = rng.choice([a for a in range(1, agents + 1) if a != me] or [me])
    if roll < 0.2 and open_proposals < 4:  # a crowded agenda gets no more proposals
        return {
            "action": "create_proposal",
            "title": f"{title} (#{me})",
            "description": text,
            "proposal_type": _PROPOSAL_TYPE[personality],
        }
    if roll < 0.45:
        richest = max(range(3), key=lambda i: stock[i])
        if stock[richest] > 6:
            resource = ("food", "energy", "materials")[richest]
            return {
                "action": "trade",
                "recipient_agent_id": other,
                "resource_type": resource,
                "amount": float(rng.randint(1, 3)),
            }
    if roll < 0.6 and posts:
        parent = rng.choice(posts)
        reply = f"I agree with #{parent}. {text}"
        return {"action": "forum_reply", "parent_message_id": parent, "content": reply}
    if roll < 0.7:
        return {"action": "direct_message", "recipient_agent_id": other, "content": text}
    if roll < 0.93:
        return {"action": "forum_post", "content": f"{title}: {text}"}
    return {"action": "idle", "reasoning": "Watching how things develop."}
