"""Asking the model for a step's arguments: the reply checked syntactically and by the user's
``is_valid`` (whose message goes back to the model, verbatim as Diskurs sends it or wrapped, as
the workflow's semantics say), and the attempts running out: Diskurs carries on with the
arguments it had ('No valid answer found after n trials.'), this project's format may fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diskurs.errors import PromptValidationError as DiskursValidationError

from functions import work
from functions.agents.model_call import AnswerFailed
from functions.conductor import calling
from functions.conductor.turns import Context
from shared.conductor import arguments
from shared.conductor.documents import AgentDoc, NoValidReply, ValidationMessage, step_id
from shared.conductor.prompt_args import PromptValidationError
from shared.llm.tools import ToolUse


def validator(
    user: arguments.ArgumentClass, is_valid: Callable[[Any], Any], current: Any, name: str
) -> Callable[[Any], Any]:
    """Syntactic (the reply into the arguments), then the user's ``is_valid``: its
    ``PromptValidationError`` (ours or Diskurs') goes back to the model; anything else it
    raises ends the step at once (asking again would not fix it)."""

    def validate(parsed: Any) -> Any:
        arg = arguments.parse(user, parsed, current)
        try:
            work.user_code(name, is_valid, arg, passing=arguments.validation_errors())
        except DiskursValidationError as error:
            raise PromptValidationError(str(error)) from None
        return arg

    return validate


def invalid_message(is_valid: Callable[[Any], Any], arg: Any, name: str) -> str | None:
    """Diskurs' ``render_user_template``: ``is_valid`` on the arguments about to be rendered;
    the message of the ``PromptValidationError`` it raises is sent instead of the user template
    (None: valid, render it). Anything else it raises ends the step, as in a reply's check."""
    try:
        work.user_code(name, is_valid, arg, passing=arguments.validation_errors())
    except arguments.validation_errors() as error:
        return str(error)
    return None


def ask(
    ctx: Context,
    agent: AgentDoc,
    prompt: str,
    schema: dict[str, Any],
    validate: Callable[[Any], Any],
    tools: ToolUse | None = None,
) -> tuple[Any, str]:
    """The agent's reply (its model settings, else the workflow's; at most its
    ``max_attempts``), or (carrying on, as Diskurs) None and the note when the attempts ran out.
    ``tools``: the agent's tools (``toolbox.step_tools``)."""
    message = ctx.semantics.validation_message or ValidationMessage.VERBATIM
    settings = agent.model_settings or ctx.wf.model_settings
    try:
        found = calling.ask_step(
            ctx.cid, step_id(ctx.step.index), agent.name, settings, prompt, schema, validate,
            agent.max_attempts, message, log_collection=ctx.log, tools=tools,
        )  # fmt: skip
    except AnswerFailed as error:
        if ctx.semantics.no_valid_reply != NoValidReply.CARRY_ON:
            raise
        return None, f"No valid answer found after {error.attempts} trials. ({error.last_error})"
    return found, ""
