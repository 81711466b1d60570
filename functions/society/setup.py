"""A new society: its members (personalities by seeded shuffle), its prompts, and day 1."""

from __future__ import annotations

import random

from functions.society import scene
from shared.models import DocModel
from shared.models.participant import AgentModelSettings
from shared.society import paths as sp
from shared.society.close_rules import first_day
from shared.society.models import PERSONALITIES, Day, Member, Society, SocietySettings
from shared.society.prompts import SocietyPrompts


def personalities(settings: SocietySettings) -> list[str]:
    """One personality per agent in the settings' proportions (largest remainders), shuffled
    by the society's seed: the same seed gives every agent the same personality."""
    shares = {p: settings.personality_shares.get(p, 0.0) for p in PERSONALITIES}
    total = sum(shares.values()) or 1.0
    exact = {p: settings.agents * v / total for p, v in shares.items()}
    counts = {p: int(v) for p, v in exact.items()}
    left = settings.agents - sum(counts.values())
    for p in sorted(exact, key=lambda p: (counts[p] - exact[p], PERSONALITIES.index(p)))[:left]:
        counts[p] += 1
    pool: list[str] = [p for p in PERSONALITIES for _ in range(counts[p])]
    random.Random(settings.seed).shuffle(pool)
    return pool


def members(society: Society) -> dict[int, Member]:
    s = society.settings
    model = AgentModelSettings(api_type=s.api_type, model_name=s.model_name)
    return {
        i: Member(
            agent_id=i,
            day=1,
            display_name=f"Agent #{i}",
            personality=p,  # type: ignore[arg-type]
            human=i in s.humans,
            resources=s.start_resources,
            land=s.land_per_agent,
            model_settings=model,
        )
        for i, p in enumerate(personalities(s), start=1)
    }


def start(society: Society) -> bool:
    """Create the society's first day unless it exists; True if this call created it. Every
    write is a deterministic set, so two deliveries at once write the same documents."""
    s = society.id
    if scene.started(s):
        return False
    people = members(society)
    context = first_day(society.settings, people)
    writes: list[tuple[str, DocModel]] = [(sp.state_path(s, 1, "context"), context)]
    for i, m in people.items():
        writes += [(sp.snapshot_path(s, 1, i), m), (sp.sub(s, sp.MEMBER, agentId=i), m)]
    return scene.set_up(s, writes, SocietyPrompts(), Day(day=1))
