"""The population personas are drawn from, as data (``population.json`` beside this file).

Each weighted list is normalised when loaded: the shipped weights are shares from surveys and
need not sum to 1. (Deliberate Lab's picker walks the raw weights, so a list summing below 1
gives its remainder to the last entry, and one summing above 1 never reaches its last
entries; here every entry gets its own share.)
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

DATA = Path(__file__).with_name("population.json")


class _Data(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Weighted(_Data):
    value: str = Field(min_length=1)
    weight: Annotated[float, Field(gt=0)]


def _normalised(items: list[Weighted]) -> list[Weighted]:
    if not items:
        raise ValueError("a weighted list needs at least one entry")
    total = sum(i.weight for i in items)
    return [Weighted(value=i.value, weight=i.weight / total) for i in items]


class LifeStage(Weighted):
    """Age, education and setting drawn together, so no 19-year-old holds a doctorate."""

    ages: tuple[int, int]
    education: list[Weighted]
    setting: list[Weighted]

    @model_validator(mode="after")
    def _check(self) -> LifeStage:
        low, high = self.ages
        if not 18 <= low <= high:
            raise ValueError(f"{self.value}: ages {self.ages} must be adults, low to high")
        self.education = _normalised(self.education)
        self.setting = _normalised(self.setting)
        return self


class Verbosity(_Data):
    level: Annotated[int, Field(ge=1)]
    description: str


class Trait(_Data):
    trait: str
    label: str


class BigFive(_Data):
    scale: Annotated[int, Field(ge=2)]
    traits: list[Trait] = Field(min_length=1)


class Population(_Data):
    about: str = ""
    sources: list[str] = []
    pronouns: list[Weighted]
    life_stages: list[LifeStage]
    cultural_backgrounds: list[Weighted]
    occupation_sectors: list[Weighted]
    life_circumstances: list[Weighted]
    verbosity: list[Verbosity] = Field(min_length=1)
    big_five: BigFive

    @model_validator(mode="after")
    def _normalise(self) -> Population:
        self.pronouns = _normalised(self.pronouns)
        self.life_stages = [
            stage.model_copy(update={"weight": share.weight})
            for stage, share in zip(
                self.life_stages, _normalised(list(self.life_stages)), strict=True
            )
        ]
        self.cultural_backgrounds = _normalised(self.cultural_backgrounds)
        self.occupation_sectors = _normalised(self.occupation_sectors)
        self.life_circumstances = _normalised(self.life_circumstances)
        return self


@functools.cache
def population() -> Population:
    """The shipped population (read once)."""
    return Population.model_validate_json(DATA.read_text())
