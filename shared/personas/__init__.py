"""Generated agent personas (Deliberate Lab's persona generation): parameters sampled from a
population's shares with Big Five traits spread by a Halton sequence (``sampling``), the prompt
that asks a model for the persona and the check of its answer (``prompt``), and the template
entries and persona documents they become (``documents``). Pure: the model call and the writes
are the caller's (``tools/personas.py``)."""

from shared.personas.documents import entry, persona_id
from shared.personas.population import Population, population
from shared.personas.prompt import SCHEMA, Sketch, check_reply, persona_prompt
from shared.personas.sampling import PersonaParams, sample

__all__ = [
    "SCHEMA",
    "PersonaParams",
    "Population",
    "Sketch",
    "check_reply",
    "entry",
    "persona_id",
    "persona_prompt",
    "population",
    "sample",
]
