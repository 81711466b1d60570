"""``get_final_decision``: each final agent's conclusion, and the majority."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any


def get_final_decision(
    responses: Mapping[str, dict[str, Any]], conclude: Callable[[dict[str, Any]], str]
) -> dict[str, Any]:
    """The conclusion most final agents reach (ties: alphabetical first), with every vote."""
    votes = {agent: conclude(response) for agent, response in sorted(responses.items())}
    counts = Counter(votes.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "conclusion": ranked[0][0] if ranked else "",
        "votes": votes,
        "counts": dict(counts),
        "agents": sorted(responses),
    }
