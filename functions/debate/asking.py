"""A debate agent's model call: the backbone's ``model_call.ask`` (retries, validation,
corrective turns, a log of every attempt under ``debates/{d}/logs``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from functions.agents import model_call
from functions.debate import docs
from shared.debate.models import Debate
from shared.llm.json_output import parse_json_reply
from shared.models.participant import AgentModelSettings, ParticipantProfile, ProfileAgentConfig


def _caller(debate: Debate, agent: str, where: str) -> ParticipantProfile:
    """The profile ``ask`` files logs under: the agent's name and the debate's model."""
    settings = AgentModelSettings(
        api_type=debate.model.api_type, model_name=debate.model.model_name
    )
    return ParticipantProfile(
        private_id=agent,
        public_id=agent,
        current_cohort_id=where,
        agent_config=ProfileAgentConfig(agent_id="debate", model_settings=settings),
    )


def ask(
    debate_id: str,
    debate: Debate,
    agent: str,
    where: str,
    prompt: str,
    schema: dict[str, Any] | None,
    validate: Callable[[Any], Any],
) -> Any:
    """Ask until ``validate`` accepts the reply. The request's seed names the agent, the round and
    a digest of the prompt, so the scripted model's statement follows from the prompt."""
    digest = hashlib.sha256(f"{debate.seed}\x1f{prompt}".encode()).hexdigest()[:16]
    site = model_call.CallSite(
        experiment_id=debate_id,
        participant=_caller(debate, agent, where),
        stage_id=where,
        description=f"debate {digest}",
        log_collection=f"{docs.debate(debate_id)}/logs",
    )
    return model_call.ask(
        site,
        prompt,
        schema,
        validate,
        retries=debate.num_retries,
        parse=parse_json_reply if schema is not None else str,  # no schema: the text as it is
    )
