"""An LLM-compiler plan (Diskurs' ``llm_compiler`` agent): the model plans calls of the
workflow's tools, each with the calls it depends on; the independent ones run in parallel.

A plan is checked before anything runs (an unknown tool, a dependency on no step, a cycle: the
message goes back to the model as a corrective turn; Diskurs would run the part before a cycle
and drop the rest in silence). A parameter ``"$id"`` stands for the result of step ``id``, as
in Diskurs' executor; one naming a step that is not among the step's dependencies is refused
too, since its value would depend on timing.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared.conductor.prompt_args import PromptValidationError
from shared.errors import BadInput
from shared.models import DocModel

REFERENCE = "$"


class PlanStep(DocModel):
    """One planned call (Diskurs' ``PlanStep``): the tool, its parameters, what it waits for."""

    step_id: str
    description: str = ""
    function: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    result: Any = None
    status: str = "pending"
    """``pending``, ``completed`` or ``failed`` (Diskurs' words)."""


class PlanError(BadInput, ValueError):
    """A plan that cannot run as written; the message is for the model."""


def references(step: PlanStep) -> set[str]:
    """The step ids its parameters name as ``$id``."""
    return {
        value[len(REFERENCE) :]
        for value in step.parameters.values()
        if isinstance(value, str) and value.startswith(REFERENCE) and len(value) > 1
    }


def check(steps: list[PlanStep], tools: set[str] | None = None) -> None:
    """Raise PlanError naming the first step that cannot run: a duplicate id, an unknown tool,
    a dependency or reference on no step (or a reference it does not depend on), a cycle.
    ``tools`` None: any tool name (a call of an unknown one fails when it runs, and the model
    replans, as in Diskurs)."""
    ids = [s.step_id for s in steps]
    seen: set[str] = set()
    for step in steps:
        if step.step_id in seen:
            raise PlanError(f"step ids must be unique: {step.step_id!r} is used twice")
        seen.add(step.step_id)
        if tools is not None and step.function not in tools:
            raise PlanError(
                f"step {step.step_id!r}: {step.function!r} is not one of the tools {sorted(tools)}"
            )
        unknown = [d for d in step.depends_on if d not in ids]
        if unknown:
            raise PlanError(f"step {step.step_id!r} depends on unknown step(s) {unknown}")
        loose = sorted(references(step) - set(step.depends_on))
        if loose:
            raise PlanError(
                f"step {step.step_id!r} uses the result of {loose} without depending on it: "
                "add it to depends_on"
            )
    layers(steps)


def layers(steps: list[PlanStep]) -> list[list[str]]:
    """The steps in layers: each layer's steps depend only on earlier layers (they can run
    together). A cycle is a PlanError naming its steps."""
    remaining = {s.step_id: set(s.depends_on) for s in steps}
    order: list[list[str]] = []
    while remaining:
        ready = [sid for sid, deps in remaining.items() if not deps & remaining.keys()]
        if not ready:
            raise PlanError(f"the steps {sorted(remaining)} depend on each other in a cycle")
        order.append(ready)
        for sid in ready:
            del remaining[sid]
    return order


def resolve(step: PlanStep, results: dict[str, Any]) -> dict[str, Any]:
    """The step's parameters with each ``$id`` replaced by that step's result."""
    return {
        name: (
            results.get(value[len(REFERENCE) :])
            if isinstance(value, str)
            and value[len(REFERENCE) :] in results
            and value.startswith(REFERENCE)
            else value
        )
        for name, value in step.parameters.items()
    }


def is_valid_plan(argument: Any) -> bool:
    """An LLM compiler's ``is_valid``: its ``execution_plan`` can run (else the message goes
    back to the model as its corrective turn)."""
    raw = getattr(argument, "execution_plan", None) or []
    steps = [PlanStep.model_validate(_as_dict(s)) for s in raw]
    try:
        check(steps)
    except PlanError as error:
        raise PromptValidationError(str(error)) from None
    return True


def _as_dict(step: Any) -> dict[str, Any]:
    to_dict = getattr(step, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else dict(step)
