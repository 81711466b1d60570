"""A step's model call: the backbone's ``model_call.ask`` (provider retries, corrective turns,
every attempt logged), with the attempts logged under the step document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from functions.agents.model_call import CallSite, ask
from shared import paths
from shared.conductor.documents import ATTEMPTS, CONDUCTOR, ValidationMessage
from shared.llm.tools import ToolUse
from shared.models import AgentModelSettings, MediatorProfile, ProfileAgentConfig
from shared.prompts import corrective_turn


def ask_step(
    conversation_id: str,
    step_id: str,
    agent: str,
    settings: AgentModelSettings,
    prompt: str,
    schema: dict[str, Any],
    validate: Callable[[Any], Any],
    max_attempts: int,
    message: ValidationMessage = ValidationMessage.WRAPPED,
    log_collection: str = "",
    tools: ToolUse | None = None,
) -> Any:
    """Ask until ``validate`` accepts a reply (at most ``max_attempts`` replies), each error
    sent back as ``message`` says. Raises as ``ask`` does: AnswerFailed when the attempts ran
    out, ProviderFailing in an outage, a ModelError for a configuration the provider refuses.
    ``tools``: the step's tools, each call recorded under the step (``tool_calls.StepTools``)."""
    speaker = MediatorProfile(
        private_id=f"{conversation_id}.{agent}",
        public_id=agent,
        name=agent,
        type=CONDUCTOR if agent == CONDUCTOR else "agent",
        agent_config=ProfileAgentConfig(agent_id=agent, model_settings=settings),
    )
    site = CallSite(
        experiment_id=conversation_id,
        participant=speaker,
        stage_id=step_id,
        description=f"{agent} step {step_id}",
        log_collection=log_collection
        or paths.build(ATTEMPTS, conversationId=conversation_id, stepId=step_id),
    )
    # VERBATIM: the validation error's message as it is (Diskurs); ``str`` hands it back unchanged
    corrective = str if message == ValidationMessage.VERBATIM else corrective_turn
    return ask(
        site,
        prompt,
        schema,
        validate,
        retries=max_attempts - 1,
        corrective=corrective,
        tools=tools,
    )
