"""One agent's turn in a chat (DL's sendAgentParticipantMessage / checkReadyToEndChat, now one
Pub/Sub function): gates, one model call, typing delay, moved-on check, election, readiness.
The same pipeline serves group chats (free-form or turn-based) and private chats."""

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
from functions.chat import agents, gates, messages, readiness, turn_order
from functions.chat.agents import ChatAgent
from functions.chat.room import Room
from functions.chat.turn_request import Turn, publish
from functions.errors import record_error
from shared.llm import ModelError
from shared.llm.json_output import parse_json_reply
from shared.models import (
    ChatMessage,
    ChatStage,
    CohortConfig,
    ConversationStage,
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
DECLINED = "{name} has nothing to add right now."
log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Decision:
    explanation: str
    should_respond: bool
    message: str
    ready_to_end: bool


@dataclasses.dataclass(frozen=True)
class Scene:
    """Everything a turn works with, loaded once."""

    turn: Turn
    room: Room
    stage: ConversationStage
    agent: ChatAgent

    @property
    def participant(self) -> ParticipantProfile | None:
        profile = self.agent.profile
        return profile if isinstance(profile, ParticipantProfile) else None

    @property
    def turn_based(self) -> bool:
        return isinstance(self.stage, ChatStage) and self.stage.is_turn_based

    def must_respond(self, history: list[ChatMessage]) -> bool:
        """No choosing silence: in a turn-based chat (DL), and for a participant who owes a
        private chat more messages (minNumberOfTurns; silence there would stall it)."""
        if self.turn_based:
            return True
        participant = self.participant
        return (
            self.room.is_private
            and participant is not None
            and readiness.turns_left(self.stage, participant, history) > 0
        )


def _decision_reader(output: ChatStructuredOutputConfig | None, must_respond: bool):
    def read(reply: Any) -> Decision:
        if output is None or not output.enabled:
            text = reply if isinstance(reply, str) else ""
            return Decision("", bool(text.strip()), text.strip(), False)
        if not isinstance(reply, dict):
            raise AnswerValidationError("the reply must be a JSON object")
        message = reply.get(output.message_field)
        should = must_respond or reply.get(output.should_respond_field) is not False
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


def _load(turn: Turn) -> Scene | str:
    stage = store.read_stage(turn.experiment_id, turn.stage_id)
    if not isinstance(stage, ConversationStage):
        return "not-a-chat"
    agent = agents.load(turn.experiment_id, turn.agent_type, turn.agent_id, stage)
    if agent is None:
        return "not-an-active-agent"
    scene = Scene(turn, turn.room, stage, agent)
    if scene.participant is not None and not _present(scene.participant, turn):
        return "not-at-stage"
    if scene.room.is_private and scene.participant is None:
        partner = store.read(
            ParticipantProfile, store.participant_path(turn.experiment_id, turn.participant_id)
        )
        if not _present(partner, turn):
            return "partner-left"
    return scene


def _present(participant: ParticipantProfile, turn: Turn) -> bool:
    return (
        participant.current_status == ParticipantStatus.IN_PROGRESS
        and participant.current_stage_id == turn.stage_id
        and participant.current_cohort_id == turn.cohort_id
    )


def run(turn: Turn) -> str:
    """Take the turn; returns what happened (logged, and used by tests)."""
    scene = _load(turn)
    if isinstance(scene, str):
        return _pass_on(turn, scene)  # e.g. it left since the fan-out: the next one may answer
    room, stage, agent, participant = scene.room, scene.stage, scene.agent, scene.participant
    history = messages.history(room)
    public = readiness.chat_state(room, history)
    if readiness.time_is_up(stage, public):
        if participant is not None and room.is_private:
            return "time-up+" + readiness.participant_ready(room, stage, participant)
        return "time-up"
    if participant is not None and readiness.conversation_over(stage, participant, history):
        return _pass_on(turn, "over+" + readiness.participant_ready(room, stage, participant))
    why_not = gates.refusal(agent, history, opening=turn.is_opening, may_follow_itself=turn.nudge)
    if why_not is None and not turn.is_opening and gates.moved_on(history, turn.trigger_chat_id):
        why_not = "moved-on"
    if participant is not None and history and (turn.readiness_only or why_not == "max-responses"):
        if scene.turn_based and why_not:
            _skip_silently(scene, public)
        outcome = _readiness_only(scene, participant)
        return outcome if turn.readiness_only else _pass_on(turn, f"{why_not}+{outcome}")
    if turn.readiness_only:
        return "nothing-to-end"
    if scene.turn_based and public.get("currentTurnParticipantId") != agent.public_id:
        return "not-my-turn"
    if why_not:
        if scene.turn_based and why_not != "moved-on":
            _skip_silently(scene, public)
        return _pass_on(turn, why_not)
    claim = turn.is_opening or (
        isinstance(stage, ChatStage) and stage.election_policy == "claim" and not scene.turn_based
    )
    if claim and not messages.take_lock(room, turn.log_id, _responder(agent)):
        return "already-claimed"
    if turn.is_opening and agent.settings.initial_message.strip():
        fixed = Decision("initial message", True, agent.settings.initial_message.strip(), False)
        return _speak(scene, fixed, claim)
    try:
        decision = _ask(scene, scene.must_respond(history))
    except (ModelError, AnswerFailed, DocumentError) as error:
        if claim:
            messages.release_lock(room, turn.log_id)
        _record(scene, error)
        _after_failure(scene, public)
        return _pass_on(turn, "model-failed")
    outcome = _speak(scene, decision, claim)
    if participant is not None and history:
        outcome += _readiness_after(scene, participant, decision)
    return outcome


def _readiness_after(scene: Scene, participant: ParticipantProfile, decision: Decision) -> str:
    """Readiness after a turn: the separate query when the stage asks for it, else the reply's
    field; in a private chat, declining to answer means ready (DL)."""
    if scene.stage.readiness_query:
        return "+" + _readiness_only(scene, participant, occasion=f"after-{scene.turn.log_id}")
    declined_privately = scene.room.is_private and not decision.should_respond
    if decision.ready_to_end or declined_privately:
        return "+" + readiness.participant_ready(scene.room, scene.stage, participant)
    return ""


def _responder(agent: ChatAgent) -> dict[str, Any]:
    return {"agentType": agent.type, "privateId": agent.private_id, "publicId": agent.public_id}


def _pass_on(turn: Turn, why: str) -> str:
    """Claim policy: a declining or gated agent hands the message to the next in turn order."""
    if turn.order and turn.agent_id in turn.order and not turn.is_opening:
        index = turn.order.index(turn.agent_id)
        if index + 1 < len(turn.order):
            publish(dataclasses.replace(turn, agent_id=turn.order[index + 1]))
    return why


def _after_failure(scene: Scene, public: dict[str, Any]) -> None:
    """Nobody waits on a failed model: a turn-based chat skips the agent with a notice; a
    mediator in a private chat posts DL's error message so the participant is not left
    waiting."""
    if scene.turn_based and isinstance(scene.stage, ChatStage):
        turn_order.skip(scene.room, scene.stage, scene.agent, public.get("currentDiscussionId"))
    elif scene.room.is_private and scene.participant is None:
        messages.write(scene.room, _error_message(scene.agent))


def _skip_silently(scene: Scene, public: dict[str, Any]) -> None:
    """A turn holder that may not speak (its gates say no) passes the turn on."""
    if isinstance(scene.stage, ChatStage) and public.get("currentTurnParticipantId") == (
        scene.agent.public_id
    ):
        turn_order.skip(scene.room, scene.stage, scene.agent, public.get("currentDiscussionId"))


def _context(scene: Scene):
    turn, stage = scene.turn, scene.stage
    experiment = store.read(Experiment, store.experiment_path(turn.experiment_id))
    cohort = store.read(CohortConfig, store.cohort_path(turn.experiment_id, turn.cohort_id))
    members = [
        m
        for m in cohort_lock.cohort_members(turn.experiment_id, turn.cohort_id)
        if m.current_stage_id == stage.id
        and (not scene.room.is_private or m.private_id == turn.participant_id)
    ]
    ctx = build_context(
        experiment,
        cohort,
        scene.agent.profile,
        stage,
        members,
        scene.turn_based,
        private_chat_of=turn.participant_id or None,
    )
    return experiment, ctx


def _ask(scene: Scene, must_respond: bool) -> Decision:
    turn, stage, agent = scene.turn, scene.stage, scene.agent
    experiment, ctx = _context(scene)
    output = agent.config.structured_output_config
    chat_output = output if isinstance(output, ChatStructuredOutputConfig) else None
    schema = None
    if chat_output is not None and chat_output.enabled and chat_output.schema_ is not None:
        schema = schema_to_json_schema(chat_output.schema_)
        if must_respond:
            schema = without_should_respond(schema)
    text = render(agent.config, agent.config_path, ctx, schema)
    what = "opening message" if turn.is_opening else f"reply to {turn.trigger_chat_id}"
    where = f"private chat with {turn.participant_id}: " if scene.room.is_private else "chat "
    site = CallSite(turn.experiment_id, agent.profile, stage.id, where + what)
    return ask(
        site,
        text,
        schema,
        _decision_reader(chat_output, must_respond),
        retries=agent.config.num_retries,
        generation_config=agent.config.generation_config,
        api_keys=creator_api_keys(experiment),
        parse=_parse_for(chat_output),
    )


def _parse_for(output: ChatStructuredOutputConfig | None):
    if output is None or not output.enabled:
        return lambda text: text
    return parse_json_reply


def _release(scene: Scene, claimed: bool) -> None:
    if claimed and not scene.turn.is_opening:
        messages.release_lock(scene.room, scene.turn.log_id)


def _speak(scene: Scene, decision: Decision, claimed: bool) -> str:
    turn, room, agent = scene.turn, scene.room, scene.agent
    if not decision.should_respond or not decision.message:
        _release(scene, claimed)
        if room.is_private and scene.participant is None:
            _post_decline(scene)
        return _pass_on(turn, "declined")
    rng = random.Random(f"{turn.agent_id}:{turn.trigger_chat_id}")
    delay = typing_delay_s(decision.message, agent.settings.words_per_minute, rng)
    if delay:
        time.sleep(delay)
    history = messages.history(room)
    if not turn.is_opening and gates.moved_on(history, turn.trigger_chat_id):
        _release(scene, claimed)
        return "moved-on-after-delay"
    message = _message(scene, readiness.chat_state(room, history), decision)
    slot = len(gates.own(history, agent)) + 1
    limit = agent.settings.max_responses
    if limit is not None and slot > limit:  # another turn of this agent spoke meanwhile
        _release(scene, claimed)
        return "max-responses"
    election = None if claimed else turn.log_id
    if scene.turn_based and isinstance(scene.stage, ChatStage):
        posted = turn_order.post_in_turn(
            room, scene.stage, message, _responder(agent), election, slot, history
        )
    else:
        posted = messages.post(room, message, _responder(agent), election=election, slot=slot)
    if posted:
        return "spoke"
    _release(scene, claimed)
    return "not-elected"


def _post_decline(scene: Scene) -> None:
    """A mediator declining in a private chat writes no message of its own; a notice (elected
    like a reply, so one per message) tells the participant, human or agent, that nothing is
    coming, and triggers an agent participant to go on or end (DL #938, #1011)."""
    name = scene.agent.profile.name or "The mediator"
    notice = messages.system_message(
        DECLINED.format(name=name),
        None,
        **{messages.DECLINED_FIELD: scene.agent.public_id},
    )
    if not scene.turn.is_opening:
        messages.post(
            scene.room, notice, _responder(scene.agent), election=scene.turn.log_id, slot=None
        )


def _error_message(agent: ChatAgent) -> dict[str, Any]:
    """DL's sendErrorPrivateChatMessage."""
    profile = agent.profile
    return {
        **messages.system_message("Error fetching response", None),
        "type": agent.type,
        "isError": True,
        "senderId": agent.public_id,
        "agentId": profile.agent_config.agent_id if profile.agent_config else "",
        "profile": ProfileBase(name=profile.name, avatar=profile.avatar).to_firestore(),
    }


def _message(scene: Scene, public: dict[str, Any], decision: Decision) -> dict[str, Any]:
    profile, stage = scene.agent.profile, scene.stage
    threaded = isinstance(stage, ChatStage) and stage.discussions
    return ChatMessage(
        id=uuid.uuid4().hex,
        discussion_id=public.get("currentDiscussionId") if threaded else None,
        type=UserType(scene.agent.type),
        message=decision.message,
        timestamp=now(),
        profile=ProfileBase(name=profile.name, avatar=profile.avatar, pronouns=profile.pronouns),
        sender_id=profile.public_id,
        agent_id=profile.agent_config.agent_id if profile.agent_config else "",
        explanation=decision.explanation,
    ).to_firestore()


def _readiness_only(scene: Scene, participant: ParticipantProfile, occasion: str = "") -> str:
    """Ask only whether the agent is ready to end (the seed's checkReadyToEndChat); no chat
    message. An agent that may not speak (maxResponses used up) is asked once per thread, so it
    never holds a thread back; the watchdog asks again when the chat goes quiet."""
    turn, room = scene.turn, scene.room
    if not occasion:
        public = readiness.chat_state(room)
        occasion = turn.nonce or f"exhausted-{public.get('currentDiscussionId') or 'chat'}"
    lock = f"ready-{participant.private_id}-{occasion}"
    if not messages.take_lock(room, lock, _responder(scene.agent)):
        return "readiness-already-asked"
    experiment, ctx = _context(scene)
    text = render(scene.agent.config, scene.agent.config_path, ctx, None)
    site = CallSite(
        turn.experiment_id, participant, scene.stage.id, f"chat readiness query ({occasion})"
    )
    try:
        ready = ask(
            site,
            text + "\n\n" + READINESS_PROMPT,
            READINESS_SCHEMA,
            lambda reply: bool(reply.get("readyToEndChat")) if isinstance(reply, dict) else False,
            retries=1,
            api_keys=creator_api_keys(experiment),
        )
    except (ModelError, AnswerFailed) as error:
        _record(scene, error)
        return "readiness-failed"
    if not ready:
        return "not-ready"
    return "readiness+" + readiness.participant_ready(room, scene.stage, participant)


def _record(scene: Scene, error: Exception) -> None:
    if isinstance(error, DocumentError):
        record_error(FUNCTION, error)
        return
    turn, agent = scene.turn, scene.agent
    document = (
        store.participant_path(turn.experiment_id, agent.private_id)
        if agent.type == "participant"
        else agents.mediator_path(turn.experiment_id, agent.private_id)
    )
    field = getattr(error, "field", None) or "agentConfig.modelSettings"
    record_error(FUNCTION, DocumentError(document, field, f"chat stage {turn.stage_id!r}: {error}"))
