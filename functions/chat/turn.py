"""One agent's turn in a chat (DL's sendAgentParticipantMessage / checkReadyToEndChat, now one
Pub/Sub function): gates, one model call, typing delay, moved-on check, election, readiness."""

from __future__ import annotations

import dataclasses
import logging
import random
import time
import uuid
from typing import Any

from functions import store
from functions.agents import cohort_lock
from functions.agents.model_call import AnswerFailed, CallSite, ask
from functions.agents.prompting import build_context, creator_api_keys, render
from functions.chat import agents, messages, readiness
from functions.chat.agents import ChatAgent
from functions.chat.turn_request import Turn, publish
from functions.errors import record_error
from shared.llm import ModelError
from shared.llm.json_output import parse_json_reply
from shared.models import (
    ChatMessage,
    ChatStage,
    CohortConfig,
    DocumentError,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    ProfileBase,
    UserType,
    now,
)
from shared.prompts import ChatStructuredOutputConfig, schema_to_json_schema, without_should_respond
from shared.stages import AnswerValidationError

FUNCTION = "sendAgentChatMessage"
MAX_TYPING_DELAY_S = 10.0
READINESS_PROMPT = (
    "Are you ready to end the conversation and stop talking? Please consider whether you have "
    "met your goals and communicated with other participants."
)
READINESS_SCHEMA = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "readyToEndChat": {"type": "boolean"},
    },
    "required": ["explanation", "readyToEndChat"],
}
log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Decision:
    explanation: str
    should_respond: bool
    message: str
    ready_to_end: bool


def _decision_reader(output: ChatStructuredOutputConfig | None, turn_based: bool):
    def read(reply: Any) -> Decision:
        if output is None or not output.enabled:
            text = reply if isinstance(reply, str) else ""
            return Decision("", bool(text.strip()), text.strip(), False)
        if not isinstance(reply, dict):
            raise AnswerValidationError("the reply must be a JSON object")
        message = reply.get(output.message_field)
        should = turn_based or reply.get(output.should_respond_field) is not False
        if should and (not isinstance(message, str) or not message.strip()):
            raise AnswerValidationError(
                f"'{output.message_field}' must be your chat message when "
                f"'{output.should_respond_field}' is true"
            )
        explanation = reply.get(output.explanation_field)
        return Decision(
            explanation if isinstance(explanation, str) else "",
            should,
            message.strip() if isinstance(message, str) else "",
            bool(reply.get(output.ready_to_end_field)),
        )

    return read


def typing_delay_s(message: str, words_per_minute: float | None, rng: random.Random) -> float:
    """DL's awaitTypingDelay: words / wpm, times a random 0.75-1.25 factor, capped at 10 s."""
    if not words_per_minute:
        return 0.0
    words = len(message.split(" "))
    return min(words / words_per_minute * 60 * rng.uniform(0.75, 1.25), MAX_TYPING_DELAY_S)


def moved_on(history: list[ChatMessage], trigger_chat_id: str) -> bool:
    """Someone spoke after the trigger (system messages do not count); a trigger that is itself
    a system message, such as a new-thread announcement, is answered like any other."""
    ids = [m.id for m in history]
    if trigger_chat_id not in ids:
        return True
    later = history[ids.index(trigger_chat_id) + 1 :]
    return any(m.type != UserType.SYSTEM for m in later)


def _own(history: list[ChatMessage], agent: ChatAgent) -> list[ChatMessage]:
    return [m for m in history if m.sender_id == agent.public_id and m.type == agent.type]


def _gated(turn: Turn, agent: ChatAgent, history: list[ChatMessage]) -> str | None:
    """Why this agent must not answer now (DL's canSendAgentChatMessage), or None."""
    settings = agent.settings
    if settings.max_responses is not None and len(_own(history, agent)) >= settings.max_responses:
        return "max-responses"
    if len(history) < settings.min_messages_before_responding:
        return "min-messages"
    last = history[-1] if history else None
    if last is not None and not turn.is_opening:
        if not settings.can_self_trigger_calls and last.sender_id == agent.public_id:
            return "own-message"
        extra = last.model_extra or {}
        if last.type == UserType.SYSTEM and extra.get(messages.LEFT_CHAT_FIELD) == agent.public_id:
            return "own-left-message"
    if not turn.is_opening and moved_on(history, turn.trigger_chat_id):
        return "moved-on"
    return None


def run(turn: Turn) -> str:
    """Take the turn; returns what happened (logged, and used by tests)."""
    stage = store.read_stage(turn.experiment_id, turn.stage_id)
    if not isinstance(stage, ChatStage):
        return "not-a-chat"
    agent = agents.load(turn.experiment_id, turn.agent_type, turn.agent_id, stage)
    if agent is None:
        return "not-an-active-agent"
    profile = agent.profile
    if isinstance(profile, ParticipantProfile) and (
        profile.current_status != ParticipantStatus.IN_PROGRESS
        or profile.current_stage_id != stage.id
        or profile.current_cohort_id != turn.cohort_id
    ):
        return "not-at-stage"
    public = readiness.public_data(turn.experiment_id, turn.cohort_id, stage.id)
    if readiness.time_is_up(stage, public):
        return "time-up"
    history = messages.history(turn.experiment_id, turn.cohort_id, stage.id)
    why_not = _gated(turn, agent, history)
    participant = profile if isinstance(profile, ParticipantProfile) else None
    if participant is not None and history and (turn.readiness_only or why_not == "max-responses"):
        return _readiness_only(turn, agent, stage, participant)
    if turn.readiness_only:
        return "nothing-to-end"
    if why_not:
        return _pass_on(turn, why_not)
    claim = stage.election_policy == "claim" or turn.is_opening
    if claim and not messages.take_lock(
        turn.experiment_id, turn.cohort_id, stage.id, turn.log_id, _responder(agent)
    ):
        return "already-claimed"
    if turn.is_opening and agent.settings.initial_message.strip():
        fixed = Decision("initial message", True, agent.settings.initial_message.strip(), False)
        return _speak(turn, agent, stage, public, fixed, claim)
    try:
        decision = _ask(turn, agent, stage, public)
    except (ModelError, AnswerFailed, DocumentError) as error:
        if claim:
            messages.release_lock(turn.experiment_id, turn.cohort_id, stage.id, turn.log_id)
        _record(turn, agent, error)
        return _pass_on(turn, "model-failed")
    outcome = _speak(turn, agent, stage, public, decision, claim)
    if participant is not None and decision.ready_to_end and history:
        outcome += "+" + readiness.participant_ready(
            turn.experiment_id, turn.cohort_id, stage, participant
        )
    return outcome


def _responder(agent: ChatAgent) -> dict[str, Any]:
    return {"agentType": agent.type, "privateId": agent.private_id, "publicId": agent.public_id}


def _pass_on(turn: Turn, why: str) -> str:
    """Claim policy: a declining or gated agent hands the message to the next in turn order."""
    if turn.order and turn.agent_id in turn.order and not turn.is_opening:
        index = turn.order.index(turn.agent_id)
        if index + 1 < len(turn.order):
            publish(dataclasses.replace(turn, agent_id=turn.order[index + 1]))
    return why


def _context(turn: Turn, agent: ChatAgent, stage: ChatStage):
    experiment = store.read(Experiment, store.experiment_path(turn.experiment_id))
    cohort = store.read(CohortConfig, store.cohort_path(turn.experiment_id, turn.cohort_id))
    members = [
        m
        for m in cohort_lock.cohort_members(turn.experiment_id, turn.cohort_id)
        if m.current_stage_id == stage.id
    ]
    ctx = build_context(experiment, cohort, agent.profile, stage, members, stage.is_turn_based)
    return experiment, ctx


def _ask(turn: Turn, agent: ChatAgent, stage: ChatStage, public: dict[str, Any]) -> Decision:
    experiment, ctx = _context(turn, agent, stage)
    output = agent.config.structured_output_config
    chat_output = output if isinstance(output, ChatStructuredOutputConfig) else None
    schema = None
    if chat_output is not None and chat_output.enabled and chat_output.schema_ is not None:
        schema = schema_to_json_schema(chat_output.schema_)
        if stage.is_turn_based:
            schema = without_should_respond(schema)
    text = render(agent.config, agent.config_path, ctx, schema)
    what = "opening message" if turn.is_opening else f"reply to {turn.trigger_chat_id}"
    site = CallSite(turn.experiment_id, agent.profile, stage.id, f"chat {what}")
    return ask(
        site,
        text,
        schema,
        _decision_reader(chat_output, stage.is_turn_based),
        retries=agent.config.num_retries,
        generation_config=agent.config.generation_config,
        api_keys=creator_api_keys(experiment),
        parse=_parse_for(chat_output),
    )


def _parse_for(output: ChatStructuredOutputConfig | None):
    if output is None or not output.enabled:
        return lambda text: text
    return parse_json_reply


def _speak(
    turn: Turn,
    agent: ChatAgent,
    stage: ChatStage,
    public: dict[str, Any],
    decision: Decision,
    claimed: bool,
) -> str:
    if not decision.should_respond or not decision.message:
        if claimed and not turn.is_opening:
            messages.release_lock(turn.experiment_id, turn.cohort_id, stage.id, turn.log_id)
        return _pass_on(turn, "declined")
    rng = random.Random(f"{turn.agent_id}:{turn.trigger_chat_id}")
    delay = typing_delay_s(decision.message, agent.settings.words_per_minute, rng)
    if delay:
        time.sleep(delay)
    if not turn.is_opening and moved_on(
        messages.history(turn.experiment_id, turn.cohort_id, stage.id), turn.trigger_chat_id
    ):
        if claimed:
            messages.release_lock(turn.experiment_id, turn.cohort_id, stage.id, turn.log_id)
        return "moved-on-after-delay"
    fresh = readiness.public_data(turn.experiment_id, turn.cohort_id, stage.id)
    message = _message(agent, stage, fresh, decision)
    history = messages.history(turn.experiment_id, turn.cohort_id, stage.id)
    slot = len(_own(history, agent)) + 1
    limit = agent.settings.max_responses
    if limit is not None and slot > limit:  # another turn of this agent spoke meanwhile
        if claimed and not turn.is_opening:
            messages.release_lock(turn.experiment_id, turn.cohort_id, stage.id, turn.log_id)
        return "max-responses"
    posted = messages.post(
        turn.experiment_id,
        turn.cohort_id,
        stage.id,
        message,
        _responder(agent),
        election=None if claimed else turn.log_id,
        slot=slot,
    )
    if posted:
        return "spoke"
    if claimed and not turn.is_opening:
        messages.release_lock(turn.experiment_id, turn.cohort_id, stage.id, turn.log_id)
    return "not-elected"


def _message(
    agent: ChatAgent, stage: ChatStage, public: dict[str, Any], decision: Decision
) -> dict[str, Any]:
    profile = agent.profile
    return ChatMessage(
        id=uuid.uuid4().hex,
        discussion_id=public.get("currentDiscussionId") if stage.discussions else None,
        type=UserType(agent.type),
        message=decision.message,
        timestamp=now(),
        profile=ProfileBase(name=profile.name, avatar=profile.avatar, pronouns=profile.pronouns),
        sender_id=profile.public_id,
        agent_id=profile.agent_config.agent_id if profile.agent_config else "",
        explanation=decision.explanation,
    ).to_firestore()


def _readiness_only(
    turn: Turn, agent: ChatAgent, stage: ChatStage, participant: ParticipantProfile
) -> str:
    """An agent that may not speak (maxResponses used up) can still say it is ready to end, so it
    never holds a thread back. No chat message. Asked once per thread when its messages run out
    (not on every later message); the watchdog asks again when the chat goes quiet."""
    public = readiness.public_data(turn.experiment_id, turn.cohort_id, stage.id)
    occasion = turn.nonce or f"exhausted-{public.get('currentDiscussionId') or 'chat'}"
    if not messages.take_lock(
        turn.experiment_id,
        turn.cohort_id,
        stage.id,
        f"ready-{agent.private_id}-{occasion}",
        _responder(agent),
    ):
        return "readiness-already-asked"
    experiment, ctx = _context(turn, agent, stage)
    text = render(agent.config, agent.config_path, ctx, None) + "\n\n" + READINESS_PROMPT
    site = CallSite(turn.experiment_id, participant, stage.id, f"chat readiness query ({occasion})")
    try:
        ready = ask(
            site,
            text,
            READINESS_SCHEMA,
            lambda reply: bool(reply.get("readyToEndChat")) if isinstance(reply, dict) else False,
            retries=1,
            api_keys=creator_api_keys(experiment),
        )
    except (ModelError, AnswerFailed) as error:
        _record(turn, agent, error)
        return "readiness-failed"
    if not ready:
        return "not-ready"
    return "readiness+" + readiness.participant_ready(
        turn.experiment_id, turn.cohort_id, stage, participant
    )


def _record(turn: Turn, agent: ChatAgent, error: Exception) -> None:
    if isinstance(error, DocumentError):
        record_error(FUNCTION, error)
        return
    document = (
        store.participant_path(turn.experiment_id, agent.private_id)
        if agent.type == "participant"
        else agents.mediator_path(turn.experiment_id, agent.private_id)
    )
    field = getattr(error, "field", None) or "agentConfig.modelSettings"
    record_error(FUNCTION, DocumentError(document, field, f"chat stage {turn.stage_id!r}: {error}"))
