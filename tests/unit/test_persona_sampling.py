"""Persona sampling (shared/personas): the Halton sequence's spread, determinism by seed, the
population's marginals, the prompt's check, and the entries a template can include."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import statistics
from collections import Counter
from pathlib import Path

import pytest

from shared.llm.base import ModelRequest
from shared.llm.scripted import ScriptedModel
from shared.models import AgentModelSettings
from shared.personas import (
    SCHEMA,
    PersonaParams,
    check_reply,
    entry,
    persona_prompt,
    population,
    sample,
)
from shared.personas.halton import Halton, radical_inverse
from shared.personas.prompt import MIN_WORDS, Sketch
from shared.stages import AnswerValidationError
from shared.templates import agent_participant_document, persona_documents, validate_template

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
Point = tuple[float, ...]


def l2_star_discrepancy(points: list[Point]) -> float:
    """Warnock's closed form: how far the points' empirical measure is from uniform, over
    every box anchored at the origin (0 is perfectly even)."""
    n, d = len(points), len(points[0])
    first = 3.0**-d
    second = 2 / n * sum(math.prod((1 - x * x) / 2 for x in p) for p in points)
    third = sum(
        math.prod(1 - max(x, y) for x, y in zip(p, q, strict=True)) for p in points for q in points
    )
    return math.sqrt(first - second + third / n / n)


def ks_distance(values: list[float]) -> float:
    """Kolmogorov-Smirnov distance of one coordinate from the uniform distribution."""
    xs = sorted(values)
    n = len(xs)
    return max(max((i + 1) / n - x, x - i / n) for i, x in enumerate(xs))


def random_points(count: int, seed: int) -> list[Point]:
    rng = random.Random(seed)
    return [tuple(rng.random() for _ in range(5)) for _ in range(count)]


# --- the Halton sequence ---------------------------------------------------------------------


def test_radical_inverse_mirrors_the_digits() -> None:
    assert radical_inverse(0, 2) == 0
    assert radical_inverse(1, 2) == 0.5
    assert radical_inverse(6, 2) == 0.375  # 110 -> 0.011
    assert radical_inverse(5, 3) == pytest.approx(7 / 9)  # 12 -> 0.21
    with pytest.raises(ValueError):
        radical_inverse(-1, 2)


@pytest.mark.parametrize("seed", [None, 0, 1, 99])
def test_each_base_fills_every_cell_before_any_twice(seed: int | None) -> None:
    """Indices 0..b^k-1 put exactly one value in each of the b^k cells of width b^-k, plain or
    scrambled: the stratification that makes the sequence even."""
    halton = Halton(5, seed=seed)
    for dim, base in enumerate(halton.bases):
        cells = base**2
        hit = Counter(int(halton.point(i)[dim] * cells + 1e-9) for i in range(cells))
        assert sorted(hit) == list(range(cells)) and set(hit.values()) == {1}, base


def test_halton_points_are_more_even_than_random_ones() -> None:
    """100 points in 5 dimensions: every seeded Halton set is more even (L2-star discrepancy)
    than every one of 20 sets of independent random draws, and each trait's marginal is close
    to uniform (KS < 0.05) where random draws are not (> 0.06)."""
    halton = [Halton(5, seed=s).points(100) for s in range(10)]
    drawn = [random_points(100, s) for s in range(20)]
    assert max(map(l2_star_discrepancy, halton)) < min(map(l2_star_discrepancy, drawn))
    worst_halton = max(ks_distance(list(c)) for pts in halton for c in zip(*pts, strict=True))
    best_random = min(max(ks_distance(list(c)) for c in zip(*pts, strict=True)) for pts in drawn)
    assert worst_halton < 0.05 < 0.06 < best_random


def correlation(points: list[Point], a: int, b: int) -> float:
    cols = list(zip(*points, strict=True))
    return statistics.correlation(cols[a], cols[b])


def test_a_seed_scrambles_the_lockstep_of_the_plain_sequence() -> None:
    """In the plain sequence the first six values in bases 7 and 11 rise together (two traits
    in lockstep); seeded digit permutations break that, and each seed has its own points."""
    assert correlation(Halton(5).points(6), 3, 4) == pytest.approx(1.0)
    for seed in range(20):
        assert abs(correlation(Halton(5, seed=seed).points(6), 3, 4)) < 0.99, seed
    assert Halton(5, seed=1).points(8) == Halton(5, seed=1).points(8)
    assert Halton(5, seed=1).points(8) != Halton(5, seed=2).points(8)


# --- sampling --------------------------------------------------------------------------------


def test_the_same_seed_draws_the_same_personas_and_a_batch_can_be_continued() -> None:
    ten = sample(10, 42)
    assert ten == sample(10, 42)
    assert sample(4, 42) + sample(6, 42, start=5) == ten
    assert [p.index for p in ten] == list(range(1, 11))
    assert all(a != b for a, b in zip(ten, sample(10, 43), strict=True))


def test_a_batch_spreads_its_traits_over_the_scale() -> None:
    """Batches of ten: a trait takes 8 or more of the 10 scores on average (8.5 measured),
    where ten independent draws show 6.5 distinct values."""
    traits = [t.trait for t in population().big_five.traits]
    halton = [len({p.big_five[t] for p in sample(10, s)}) for s in range(20) for t in traits]
    rng = random.Random(0)
    drawn = [len({rng.randint(1, 10) for _ in range(10)}) for _ in range(len(halton))]
    assert statistics.mean(halton) >= 8 > 7 > statistics.mean(drawn)


@pytest.fixture(scope="module")
def many() -> list[PersonaParams]:
    return sample(12000, seed=2026)


def shares(values: list[str]) -> dict[str, float]:
    counts = Counter(values)
    return {k: v / len(values) for k, v in counts.items()}


def test_marginals_follow_the_population(many: list[PersonaParams]) -> None:
    people = population()
    for name, items, field in (
        ("life stage", people.life_stages, "life_stage"),
        ("pronouns", people.pronouns, "pronouns"),
        ("occupation", people.occupation_sectors, "occupation_sector"),
        ("background", people.cultural_backgrounds, "cultural_background"),
        ("circumstance", people.life_circumstances, "life_circumstance"),
    ):
        seen = shares([getattr(p, field) for p in many])
        for item in items:
            tolerance = 4 * math.sqrt(item.weight * (1 - item.weight) / len(many)) + 1e-3
            assert abs(seen.get(item.value, 0) - item.weight) < tolerance, (name, item.value)


def test_every_entry_gets_its_own_share(many: list[PersonaParams]) -> None:
    """The shipped weights do not sum to 1 (sectors 1.175, backgrounds 0.92): normalised, the
    last sector is still drawn, and the last background is not given the remainder (a raw
    cumulative walk never reaches 8 sectors and gives 'Afghan-American' 8% of personas)."""
    sectors = {p.occupation_sector for p in many}
    assert "Military or recently separated veteran" in sectors
    assert len(sectors) == len(population().occupation_sectors)
    assert shares([p.cultural_background for p in many]).get("Afghan-American", 0) < 0.005


def test_age_education_and_setting_come_from_the_life_stage(many: list[PersonaParams]) -> None:
    stages = {s.value: s for s in population().life_stages}
    for p in many:
        stage = stages[p.life_stage]
        assert stage.ages[0] <= p.age <= stage.ages[1]
        assert p.education in {e.value for e in stage.education}
        assert p.setting in {s.value for s in stage.setting}
    ages = {p.age for p in many if p.life_stage == "College student / early adult"}
    assert ages == set(range(18, 25))


def test_trait_scores_and_verbosity_are_uniform(many: list[PersonaParams]) -> None:
    """Each Big Five score 1..10 is drawn a tenth of the time, to within 0.3% (the Halton
    sequence's strata); verbosity 1..5 a fifth, to sampling error."""
    for trait in population().big_five.traits:
        seen = shares([str(p.big_five[trait.trait]) for p in many])
        assert sorted(seen, key=int) == [str(s) for s in range(1, 11)]
        assert all(abs(v - 0.1) < 0.003 for v in seen.values()), (trait.trait, seen)
    verbosity = shares([str(p.verbosity) for p in many])
    assert all(abs(v - 0.2) < 0.015 for v in verbosity.values()), verbosity


def test_the_shipped_population_is_normalised() -> None:
    people = population()
    for items in (
        people.pronouns,
        people.life_stages,
        people.cultural_backgrounds,
        people.occupation_sectors,
        people.life_circumstances,
    ):
        assert sum(i.weight for i in items) == pytest.approx(1.0)
    for stage in people.life_stages:
        assert sum(e.weight for e in stage.education) == pytest.approx(1.0)
    assert [v.level for v in people.verbosity] == [1, 2, 3, 4, 5]


# --- the prompt and its check ----------------------------------------------------------------


def scripted_reply(params: PersonaParams, turn: int = 1) -> object:
    request = ModelRequest(
        prompt=persona_prompt(params),
        response_schema=SCHEMA,
        model_name="scripted",
        seed=f"persona-x:personas:persona generation:{turn}",
    )
    return json.loads(ScriptedModel().generate(request).text)


def test_the_scripted_model_writes_valid_personas() -> None:
    for params in sample(20, 5):
        sketch = check_reply(params, scripted_reply(params))
        assert sketch.prompt_context.startswith(f"You are {sketch.name}")


def test_the_prompt_states_every_parameter() -> None:
    params = sample(1, 11)[0]
    text = persona_prompt(params, year=2026)
    for value in (
        str(params.age),
        params.pronouns,
        params.education,
        params.setting,
        params.cultural_background,
        params.occupation_sector,
        params.life_circumstance,
        f"{params.verbosity}/5",
        *(f"{score}/10" for score in params.big_five.values()),
    ):
        assert value in text
    assert f"born in the {(2026 - params.age) // 10 * 10}s" in text


def sketch_reply(words: int, extra: str = "") -> dict[str, str]:
    body = " ".join(itertools.islice(itertools.cycle(["You", "keep", "the", "books"]), words))
    return {"name": "Dana Okafor", "occupation": "payroll clerk", "sketch": f"{extra} {body}"}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("just text", "JSON object"),
        ({**sketch_reply(200), "name": "<first and last name>"}, "not a person's name"),
        ({**sketch_reply(200), "occupation": " "}, "occupation is empty"),
        (sketch_reply(MIN_WORDS - 1), f"{MIN_WORDS - 1} words"),
        (sketch_reply(200, "You are 90 years old."), "gives the age as 90"),
    ],
)
def test_a_wrong_answer_says_what_to_fix(reply: object, reason: str) -> None:
    params = sample(1, 3)[0]
    with pytest.raises(AnswerValidationError, match=reason):
        check_reply(params, reply)


def test_naming_the_background_is_sent_back() -> None:
    params = next(p for p in sample(50, 8) if p.cultural_background == "Mexican-American")
    with pytest.raises(AnswerValidationError, match="names the cultural background"):
        check_reply(params, sketch_reply(200, "You grew up Mexican-American in Tucson."))
    right_age = sketch_reply(200, f"You are {params.age} years old.")
    assert check_reply(params, right_age).text.startswith("You are")


# --- what a template includes ----------------------------------------------------------------


SKETCH = "You are Dana Okafor. You keep books."


def generated_entries(count: int = 3) -> list[dict[str, object]]:
    settings = AgentModelSettings.model_validate({"apiType": "GEMINI", "modelName": "m"})
    out = []
    for params in sample(count, 9):
        sketch = Sketch(name="Dana Okafor", occupation="payroll clerk", text=SKETCH)
        out.append(entry(params, sketch, settings))
    return out


def test_a_template_that_includes_generated_personas_validates_and_keeps_the_sketch() -> None:
    template = json.loads((TEMPLATES / "demo_all_stages.json").read_text())
    included = copy.deepcopy(template)
    included["agentParticipants"] += generated_entries()
    validate_template(included)  # DL's schema: the persona itself carries only its fields
    documents = {pid: doc for _, pid, doc in persona_documents(included)}
    persona = documents["persona-9-1"]
    assert persona["promptContext"] == SKETCH
    assert persona["generation"]["params"]["seed"] == 9
    assert persona["defaultProfile"]["name"] == "Dana Okafor"
    assert "promptContext" not in documents["thoughtful-resident"]
    agent = agent_participant_document(
        cohort_id="c",
        first_stage_id="tos",
        persona=persona,
        model_settings=persona["defaultModelSettings"],
        rng=random.Random(0),
    )
    assert agent["agentConfig"]["promptContext"] == SKETCH
    assert agent["agentConfig"]["agentId"] == "persona-9-1"
