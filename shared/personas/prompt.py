"""What a model is asked to turn sampled parameters into, and what its answer must be.

The prompt follows Deliberate Lab's persona prompt in substance (a dossier in the second
person that fits every parameter, with blind spots, a contradiction and how the person takes
pushback; the cultural background shapes the name and life but is never named), in our own
words, and asks for JSON so the answer can be checked: a reply that names the background,
gives another age, or is too short or too long goes back to the model with the reason.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import Any

from shared.personas.population import Population, population
from shared.personas.sampling import PersonaParams
from shared.stages import AnswerValidationError

MIN_WORDS, MAX_WORDS = 80, 900
"""The sketch's bounds in words (asked: about 250-300)."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 60},
        "occupation": {"type": "string", "minLength": 2, "maxLength": 120},
        "sketch": {"type": "string", "minLength": 800, "maxLength": 8000},
    },
    "required": ["name", "occupation", "sketch"],
}

_NAME = re.compile(r"^[^\W\d_][\w .'\-]*$")
_STATED_AGE = re.compile(r"\b(\d{2,3})[- ]years?[- ]old\b|\baged? (\d{2,3})\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Sketch:
    """A model's persona, checked."""

    name: str
    occupation: str
    text: str

    @property
    def prompt_context(self) -> str:
        """The text an agent carries (``agentConfig.promptContext``): the sketch, opening with
        who the agent is when the model did not."""
        if self.text.lower().startswith("you are"):
            return self.text
        return f"You are {self.name}, {self.occupation}.\n\n{self.text}"


def birth_decade(age: int, year: int) -> str:
    return f"{(year - age) // 10 * 10}s"


def persona_prompt(
    params: PersonaParams, *, year: int | None = None, people: Population | None = None
) -> str:
    people = people or population()
    year = year or datetime.date.today().year
    decade = birth_decade(params.age, year)
    verbosity = {v.level: v.description for v in people.verbosity}[params.verbosity]
    traits = "\n".join(
        f"  - {t.label}: {params.big_five[t.trait]}/{people.big_five.scale}"
        for t in people.big_five.traits
    )
    return f"""You are writing the persona of an AI agent that will take part in an online \
study as if it were a real person. Write it to fit every one of these randomly drawn \
parameters; do not fall back on a typical profile.

Parameters:
- Age: {params.age} (born in the {decade})
- Pronouns: {params.pronouns}
- Education: {params.education}
- Where they live: {params.setting}
- Cultural background: {params.cultural_background}
- Occupation sector: {params.occupation_sector}
- Current life circumstance: {params.life_circumstance}
- How much they say: {params.verbosity}/5, {verbosity}
- Big Five personality (1 = very low, {people.big_five.scale} = very high):
{traits}

The background shapes the person's name, family and community, but the sketch must never \
name it ("{params.cultural_background}" must not appear). Choose a first and last name that \
someone of that background born in the {decade} could plausibly have. Choose one concrete job \
within "{params.occupation_sector}" (a night-shift dispatcher for a regional trucking firm, \
not "works in transportation").

Write the sketch in the second person, as a plain factual dossier without metaphors, starting \
"You are <name>, <job>, ...". Cover: who they are (name, age, job, where they live); how each \
Big Five score shows in what they do; their values and concrete opinions; what they want day \
to day; how they think and where their biases lie; their usual mood and what upsets or \
pleases them; how they treat authority, strangers and the group's opinion; how they talk, \
consistent with the {params.verbosity}/5 level; one or two subjects they know little about and \
would admit to; one tension between two things they believe or want that they have not \
resolved; and whether they accept the way others frame a question or restate it in their own \
terms. Use about 250 to 300 words, and end with one sentence that begins "Before you reply, \
ask yourself" and tells the agent to consider what this person would feel and think at that \
moment and to answer from that.

Reply with JSON only: {{"name": "<first and last name>", "occupation": "<the job>", \
"sketch": "<the whole sketch>"}}."""


def _stated_ages(text: str) -> set[int]:
    return {int(a or b) for a, b in _STATED_AGE.findall(text)}


def _background_named(params: PersonaParams, text: str) -> bool:
    label = params.cultural_background.split(" (")[0].strip().lower()
    return label in text.lower()


def check_reply(params: PersonaParams, reply: Any) -> Sketch:
    """The reply as a Sketch, or AnswerValidationError saying what to fix (a corrective turn)."""
    if not isinstance(reply, dict):
        raise AnswerValidationError("the reply must be a JSON object with name, occupation, sketch")
    name = str(reply.get("name") or "").strip()
    occupation = str(reply.get("occupation") or "").strip()
    text = str(reply.get("sketch") or "").strip()
    if not _NAME.match(name) or len(name.split()) > 5:
        raise AnswerValidationError(f"name {name[:60]!r} is not a person's name")
    if not occupation:
        raise AnswerValidationError("occupation is empty")
    words = len(text.split())
    if not MIN_WORDS <= words <= MAX_WORDS:
        raise AnswerValidationError(
            f"the sketch has {words} words; write {MIN_WORDS} to {MAX_WORDS} (about 250-300)"
        )
    if _background_named(params, text):
        raise AnswerValidationError(
            f'the sketch names the cultural background "{params.cultural_background}"; '
            "let it show only in the name and the life described"
        )
    wrong = sorted(_stated_ages(text) - {params.age})
    if wrong:
        raise AnswerValidationError(
            f"the sketch gives the age as {wrong[0]}; the person is {params.age}"
        )
    return Sketch(name=name, occupation=occupation, text=text)
