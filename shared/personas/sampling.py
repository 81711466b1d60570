"""Persona parameters drawn as Deliberate Lab draws them: a life stage (which bounds age,
education and setting together), pronouns, a cultural background, an occupation sector and a
current life circumstance from their population shares, a verbosity level, and Big Five scores
on a 1-10 scale from a Halton sequence so a batch's traits spread out.

Everything follows from ``(seed, index)``: persona ``index`` of a seed is the same whether it was
drawn alone or in a batch, so ``--start`` continues a batch with new, still spread, personas.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shared.personas.halton import Halton
from shared.personas.population import Population, Weighted, population


class PersonaParams(BaseModel):
    """One persona's sampled profile (what the prompt asks a model to write a person from)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    seed: int
    index: int = Field(ge=1)
    """The persona's place in its seed's Halton sequence (1 is the first)."""
    life_stage: str
    age: int
    pronouns: str
    education: str
    setting: str
    cultural_background: str
    occupation_sector: str
    life_circumstance: str
    verbosity: int
    big_five: dict[str, int]
    """Trait name -> score on the population's scale (1..scale)."""

    def to_json(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")


def pick(items: Sequence[Weighted], rng: random.Random) -> str:
    """One value, each with its (normalised) weight's chance."""
    return rng.choices([i.value for i in items], weights=[i.weight for i in items])[0]


def score(unit: float, scale: int) -> int:
    """A point of [0, 1) as a score 1..scale, each score an equal share of the interval."""
    return min(scale, int(unit * scale) + 1)


def sample_one(seed: int, index: int, halton: Halton, people: Population) -> PersonaParams:
    rng = random.Random(f"persona:{seed}:{index}")
    stage = rng.choices(people.life_stages, weights=[s.weight for s in people.life_stages])[0]
    traits = people.big_five
    point = halton.point(index)
    return PersonaParams(
        seed=seed,
        index=index,
        life_stage=stage.value,
        age=rng.randint(*stage.ages),
        pronouns=pick(people.pronouns, rng),
        education=pick(stage.education, rng),
        setting=pick(stage.setting, rng),
        cultural_background=pick(people.cultural_backgrounds, rng),
        occupation_sector=pick(people.occupation_sectors, rng),
        life_circumstance=pick(people.life_circumstances, rng),
        verbosity=rng.choice([v.level for v in people.verbosity]),
        big_five={
            t.trait: score(u, traits.scale) for t, u in zip(traits.traits, point, strict=False)
        },
    )


def sample(
    count: int, seed: int, *, start: int = 1, people: Population | None = None
) -> list[PersonaParams]:
    """Personas ``start .. start + count - 1`` of ``seed``."""
    if count < 0 or start < 1:
        raise ValueError(f"count must be >= 0 and start >= 1 (got {count}, {start})")
    people = people or population()
    halton = Halton(len(people.big_five.traits), seed=seed)
    return [sample_one(seed, i, halton, people) for i in range(start, start + count)]
