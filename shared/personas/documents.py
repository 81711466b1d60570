"""Generated personas as Deliberate Lab agent participant entries.

An entry is what a template's ``agentParticipants`` list holds: ``{persona, promptMap}``, the
persona in Deliberate Lab's own schema (id, name, defaultProfile, defaultModelSettings), plus
two fields of ours beside them (the schema closes ``persona`` but not the entry):
``promptContext``, the sketch an agent made from the persona carries as its
``agentConfig.promptContext`` (Deliberate Lab copies promptContext and model settings from a
persona into each agent it makes), and ``generation``, what the sketch was drawn from. An empty
``promptMap`` gives the persona the default prompts, whose PROFILE_CONTEXT item is the sketch.
"""

from __future__ import annotations

from typing import Any

from shared.models import AgentModelSettings
from shared.personas.prompt import Sketch
from shared.personas.sampling import PersonaParams

AVATARS = ["🙋", "🧑", "👩", "👨", "🧔", "👵", "👴", "🧕", "👱", "🧑‍🦱", "🧑‍🦰", "🧑‍🦳"]


def persona_id(seed: int, index: int) -> str:
    """Seed and index name the persona: the same draw always gets the same id."""
    return f"persona-{seed}-{index}"


def entry(
    params: PersonaParams,
    sketch: Sketch,
    settings: AgentModelSettings,
) -> dict[str, Any]:
    """The template entry for one generated persona."""
    return {
        "persona": {
            "id": persona_id(params.seed, params.index),
            "name": f"{sketch.name} ({params.age}, {sketch.occupation})"[:120],
            "defaultModelSettings": settings.to_firestore(),
            "defaultProfile": {
                "name": sketch.name,
                "pronouns": params.pronouns,
                "avatar": AVATARS[(params.seed + params.index) % len(AVATARS)],
            },
        },
        "promptMap": {},
        "promptContext": sketch.prompt_context,
        "generation": {
            "params": params.to_json(),
            "occupation": sketch.occupation,
            "model": settings.to_firestore(),
        },
    }
