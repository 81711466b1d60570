"""The debate's user functions, guarded: whatever a function a user registered raises (other
than a validator's ``AnswerValidationError``) becomes ``work.UserCodeError`` naming it, which
ends the unit at once. A bug in user code is never a reason to call the model again."""

from __future__ import annotations

import functools
from typing import Any

from functions import work
from functions.debate import docs
from shared.debate import kits
from shared.debate.kits import Kit
from shared.debate.models import Debate
from shared.stages import AnswerValidationError


class GuardedPrompts:
    """A user's PromptSet whose methods are called as user code; attributes pass through."""

    def __init__(self, label: str, inner: Any) -> None:
        self._label = label
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value
        return functools.partial(work.user_code, f"{self._label}.{name}", value)


def kit(debate: Debate, d: str) -> Kit:
    """The debate's user functions (a name nobody registered: a DocumentError naming the
    field), each called through ``work.user_code`` and named by its role and registered name."""
    names = debate.user_functions
    found = kits.resolve(names, docs.debate(d))

    def guard(role: str, name: str, fn: Any, *passing: type[BaseException]) -> Any:
        return functools.partial(work.user_code, f"{role} {name!r}", fn, passing=passing)

    return Kit(
        format_agent_response=guard(
            "format_agent_response",
            names.format_agent_response,
            found.format_agent_response,
            AnswerValidationError,
        ),
        draw_final_conclusion=guard(
            "draw_final_conclusion", names.draw_final_conclusion, found.draw_final_conclusion
        ),
        compare_responses=guard(
            "compare_responses", names.compare_responses, found.compare_responses
        ),
        prompts=GuardedPrompts(f"prompts {names.prompts!r}", found.prompts),
    )
