"""One agent's turn in a chat (DL's sendAgentParticipantMessage / checkReadyToEndChat, now one
Pub/Sub function). The same pipeline serves group chats (free-form or turn-based) and private
chats; each step returns a typed outcome or lets the turn go on:

    load the scene → has the chat ended for it? → gates → readiness instead of a message?
    → is it its turn? → claim, ask the model, wait the typing delay, post → readiness after
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import random
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from functions import journal, reads, rooms, store, transactions, work
from functions.agents import cohort_lock
from functions.agents.model_call import AnswerFailed, CallSite, ProviderUnavailable, ask
from functions.agents.prompting import build_context, creator_api_keys, creator_keys_path, render
from functions.chat import (
    agents,
    conducted,
    election,
    gates,
    messages,
    quiet,
    readiness,
    turn_order,
)
from functions.chat.agents import ChatAgent
from functions.chat.election import ElectionPolicy
from functions.chat.gates import Refusal
from functions.chat.readiness import Readiness
from functions.errors import record_error
from functions.rooms import Room
from functions.wire import AgentTurn
from shared.llm import ModelError
from shared.llm.json_output import parse_json_reply
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    CohortConfig,
    ConversationStage,
    DocumentError,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    ProfileBase,
    StageConfig,
    UserType,
    now,
)
from shared.prompts import (
    ChatStructuredOutputConfig,
    PromptContext,
    schema_to_json_schema,
    without_should_respond,
)
from shared.stages import AnswerValidationError

FUNCTION = "sendAgentChatMessage"
REGISTERED = "onAgentTurn"
"""The function the turn runs in (``functions.registry``), under which its failed deliveries
are counted (``functions._entry``)."""
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


class TurnOutcome(StrEnum):
    SPOKE = "spoke"
    DECLINED = "declined"
    NOT_ELECTED = "not-elected"
    ALREADY_CLAIMED = "already-claimed"
    MOVED_ON_AFTER_DELAY = "moved-on-after-delay"
    NOT_A_CHAT = "not-a-chat"
    NOT_AN_ACTIVE_AGENT = "not-an-active-agent"
    NOT_AT_STAGE = "not-at-stage"
    PARTNER_LEFT = "partner-left"
    TIME_UP = "time-up"
    OVER = "over"
    NOT_MY_TURN = "not-my-turn"
    NOTHING_TO_END = "nothing-to-end"
    READINESS_ONLY = "readiness-only"
    MODEL_FAILED = "model-failed"
    WRITE_REFUSED = "write-refused"


@dataclasses.dataclass(frozen=True)
class TurnResult:
    """What the turn did (logged, and read by tests): its outcome, a gate that stopped it, and
    what came of the agent's readiness to end, if that was acted on."""

    outcome: TurnOutcome | Refusal
    readiness: Readiness | None = None

    def __str__(self) -> str:
        return f"{self.outcome}+{self.readiness}" if self.readiness else str(self.outcome)


@dataclasses.dataclass(frozen=True)
class Decision:
    explanation: str
    should_respond: bool
    message: str
    ready_to_end: bool


@dataclasses.dataclass(frozen=True)
class Scene:
    """Everything a turn works with, loaded once; the prompt context at most once."""

    turn: AgentTurn
    stage: ConversationStage
    agent: ChatAgent
    claim: messages.Lock | None = None
    """The message's claim, taken with the turn's first reads (``_run_claimed``)."""

    @property
    def room(self) -> Room:
        return self.turn.room

    @property
    def participant(self) -> ParticipantProfile | None:
        profile = self.agent.profile
        return profile if isinstance(profile, ParticipantProfile) else None

    @property
    def threaded(self) -> bool:
        """Has discussion threads (the public data says which one is current)."""
        return isinstance(self.stage, ChatStage) and bool(self.stage.discussions)

    @property
    def turn_based(self) -> bool:
        return isinstance(self.stage, ChatStage) and self.stage.is_turn_based

    @functools.cached_property
    def policy(self) -> ElectionPolicy:
        """How the stage elects who answers (``election``), chosen once per turn."""
        return election.policy_for(self.stage)

    @property
    def claims(self) -> bool:
        """Takes the message's election record before asking the model (the policy says)."""
        return self.policy.claims(self.turn)

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

    @functools.cached_property
    def prompt(self) -> tuple[Experiment, PromptContext]:
        turn, stage = self.turn, self.stage
        experiment = store.read(Experiment, store.experiment_path(turn.experiment_id))
        cohort = store.read(CohortConfig, store.cohort_path(turn.experiment_id, turn.cohort_id))
        members = [
            m
            for m in cohort_lock.members_shown(turn.experiment_id, turn.cohort_id)
            if m.current_stage_id == stage.id
            and (not self.room.is_private or m.private_id == turn.participant_id)
        ]
        ctx = build_context(
            experiment,
            cohort,
            self.agent.profile,
            stage,
            members,
            self.turn_based,
            private_chat_of=turn.participant_id or None,
        )
        return experiment, ctx


# ---- the pipeline --------------------------------------------------------------------------


def run(turn: AgentTurn, event_id: str = "") -> TurnResult:
    """Take the turn; a turn that does not answer hands the message on (as its policy says).
    ``event_id``: the delivery's event, whose earlier failure (``work.delivery_failures_path``,
    read with the turn's first reads: no round trip of its own) makes this run a re-execution:
    its model calls take the replies the failed one recorded (``journal``) before asking."""
    if turn.conducted and not conducted.still_picked(turn):
        return TurnResult(TurnOutcome.NOT_ELECTED)  # the conductor has picked another since
    failures = work.delivery_failures_path(REGISTERED, event_id) if event_id else ""
    with reads.ahead(), store.writing_later():  # logs: with the post
        if not election.claims_from_the_start(turn):
            history = _read_first(turn, failures)
            with journal.revisiting(_made_before(turn, failures)):
                return _run(turn, history, None)
        return _run_claimed(turn, failures)


def _made_before(turn: AgentTurn, *evidence: str) -> bool:
    """Whether this turn may have been made before, so its model calls look in the journal: a
    delivery of its event failed before, or it passed the message on before (``evidence``: those
    records' paths, read ahead), or the watchdog re-drove it (``redriven``)."""
    return turn.redriven or any(p and store.snapshot_data(p) is not None for p in evidence)


def _run_claimed(turn: AgentTurn, failures: str = "") -> TurnResult:
    """A claim turn takes the message's claim beside its first reads (a round trip each, and
    most such turns answer); another delivery holding it stops this one at once. A turn that
    then does not answer lets it go, with the record that it passed the message on
    (``messages.passed_id``, read beside a duplicate's first reads: a duplicate takes its
    decline from the journal), before handing the message on."""
    owner = {"agentType": turn.agent_type, "privateId": turn.agent_id}
    passed = messages.passed_id(turn.trigger_chat_id, turn.agent_type, turn.agent_id)
    taking = reads.start(lambda: messages.take_lock(turn.room, turn.log_id, owner))
    try:
        history = _read_first(turn, failures, turn.room.log_path(passed))
    except BaseException:
        _drop_claim(turn, taking)
        raise
    with messages.lock(turn.room, turn.log_id, owner, take=lambda *_: taking()) as claim:
        if not claim.taken:
            return TurnResult(TurnOutcome.ALREADY_CLAIMED)
        claim.passed = (passed, owner)
        with journal.revisiting(_made_before(turn, failures, turn.room.log_path(passed))):
            return _run(turn, history, claim)


def _read_first(turn: AgentTurn, *evidence: str) -> list[ChatMessage]:
    """The turn's first round trip: the documents the scene reads (``_scene_documents``, read
    ahead for the turn, and ``evidence`` that it was made before), the chat it decides on, and
    the cohort's members a prompt shows, which
    its prompt then takes (``members_shown``). The chat and the members are reads the message's
    other turns share, so a turn that then stops (a gate, an agent gone) costs little more."""
    history, _, _ = reads.three(
        lambda: rooms.history_showing(turn.room, turn.trigger_chat_id, _members(turn)),
        lambda: cohort_lock.members_shown(turn.experiment_id, turn.cohort_id),
        lambda: reads.batch([*_scene_documents(turn), *evidence]),
    )
    return history


def _members(turn: AgentTurn) -> rooms.Members | None:
    """A group chat's members as its prompt shows them (``members_shown``: one read per
    instance and moment, whoever asks), read beside the chat so that the senders among them
    need no query after it; none for a private chat (its senders: a participant, mediators)."""
    if turn.room.is_private:
        return None
    return lambda: cohort_lock.members_shown(turn.experiment_id, turn.cohort_id)


def _scene_documents(turn: AgentTurn) -> list[str]:
    """What a turn reads first, in one round trip: the stage and the experiment, the agent
    (``agents.documents_of``), the chat's public data, the cohort a prompt shows, a private
    chat's partner."""
    e = turn.experiment_id
    out = [
        store.stage_path(e, turn.stage_id),
        store.experiment_path(e),
        *agents.documents_of(e, turn.agent_type, turn.agent_id, turn.stage_id),
    ]
    room = turn.room
    if room.is_private:
        out.append(store.participant_path(e, turn.participant_id))
    else:
        out.append(room.public_path)
    if not turn.readiness_only:
        out.append(store.cohort_path(e, turn.cohort_id))
    return out


def _keys_path(experiment_id: str) -> str:
    """The creator's API keys, read with the agent's prompt (a turn that asks the model needs
    them); '' when the experiment cannot be read (its error is met where it is used)."""
    try:
        experiment = store.read(Experiment, store.experiment_path(experiment_id))
    except DocumentError:
        return ""
    return creator_keys_path(experiment) or ""


def _drop_claim(turn: AgentTurn, taking: Callable[[], Any]) -> None:
    """The turn failed before it used the claim it took: released, so a retry takes it again."""
    try:
        taken = taking()
    except Exception:  # not taken: nothing to release, and the turn's own failure is raised
        return
    if taken is not None:
        messages.release_lock(turn.room, turn.log_id)


def _run(turn: AgentTurn, history: list[ChatMessage], claim: messages.Lock | None) -> TurnResult:
    stage = store.read_stage(turn.experiment_id, turn.stage_id)
    scene = _load(turn, stage)
    if isinstance(scene, TurnOutcome):  # e.g. it left since the fan-out
        if claim is not None:
            claim.let_go()
        election.policy_for(stage).hand_on(turn)
        return TurnResult(scene)
    if claim is not None:
        if not scene.claims:  # the stage's policy changed since the fan-out
            claim.let_go()
        else:
            scene = dataclasses.replace(scene, claim=claim)
    public = rooms.state(scene.room, history)
    if scene.turn_based and turn.is_opening and history:
        # the chat was opened meanwhile: the holder answers its last message, once (the same
        # election as that message's own turn for it)
        scene = dataclasses.replace(
            scene, turn=turn.model_copy(update={"trigger_chat_id": history[-1].id})
        )
    return (
        _ended(scene, history, public)
        or _readiness_instead(scene, history, public)
        or _not_now(scene, history, public)
        or _respond(scene, history, public)
    )


def _load(turn: AgentTurn, stage: StageConfig) -> Scene | TurnOutcome:
    if not isinstance(stage, ConversationStage):
        return TurnOutcome.NOT_A_CHAT
    keys = _keys_path(turn.experiment_id)
    agent = agents.load(turn.experiment_id, turn.agent_type, turn.agent_id, stage, [keys])
    if agent is None:
        return TurnOutcome.NOT_AN_ACTIVE_AGENT
    scene = Scene(turn, stage, agent)
    if scene.participant is not None and not _present(scene.participant, turn):
        return TurnOutcome.NOT_AT_STAGE
    if scene.room.is_private and scene.participant is None:
        partner = store.read(
            ParticipantProfile, store.participant_path(turn.experiment_id, turn.participant_id)
        )
        if not _present(partner, turn):
            return TurnOutcome.PARTNER_LEFT
    return scene


def _present(participant: ParticipantProfile, turn: AgentTurn) -> bool:
    return (
        participant.current_status == ParticipantStatus.IN_PROGRESS
        and participant.current_stage_id == turn.stage_id
        and participant.current_cohort_id == turn.cohort_id
    )


def _ended(scene: Scene, history: list[ChatMessage], public: ChatPublicData) -> TurnResult | None:
    """The chat's time is up, or a private chat has had all its turns: the participant leaves
    (when it may) instead of speaking."""
    participant = scene.participant
    if readiness.time_is_up(scene.stage, public):
        if participant is not None and scene.room.is_private:
            ready = readiness.participant_ready(scene.room, scene.stage, participant)
            return TurnResult(TurnOutcome.TIME_UP, ready)
        return TurnResult(TurnOutcome.TIME_UP)
    if participant is not None and readiness.conversation_over(scene.stage, participant, history):
        ready = readiness.participant_ready(scene.room, scene.stage, participant)
        return _pass_on(scene, TurnResult(TurnOutcome.OVER, ready))
    if participant is not None and _ready_unacted(scene, history, public):
        ready = readiness.participant_ready(scene.room, scene.stage, participant)
        if ready in (Readiness.LEFT, Readiness.ALREADY_LEFT):
            return _pass_on(scene, TurnResult(TurnOutcome.OVER, ready))
    return None


def _ready_unacted(scene: Scene, history: list[ChatMessage], public: ChatPublicData) -> bool:
    """The agent's last reply in a group chat's last thread said it is ready to end, and it is
    still here: the turn that posted it was killed before it left (in a calm run it leaves in
    that turn, just after the post, and is asked nothing more). It leaves now instead of
    answering, as the calm run's agent would have been gone."""
    if scene.room.is_private or not readiness.on_last_thread(scene.stage, public):
        return False
    own = [m for m in history if m.sender_id == scene.agent.public_id and not m.is_error]
    return bool(own) and bool((own[-1].model_extra or {}).get(messages.SAID_READY_FIELD))


def _refusal(scene: Scene, history: list[ChatMessage], public: ChatPublicData) -> Refusal | None:
    turn = scene.turn
    return gates.refusal_to_answer(
        scene.agent,
        history,
        turn.trigger_chat_id,
        nudge=turn.nudge,
        thread=public.current_discussion_id,
    )


def _readiness_instead(
    scene: Scene, history: list[ChatMessage], public: ChatPublicData
) -> TurnResult | None:
    """A readiness-only turn, or a participant whose responses are used up: it is asked only
    whether it is ready to end (no message), so it never holds a thread back."""
    turn, participant = scene.turn, scene.participant
    why_not = _refusal(scene, history, public)
    wanted = turn.readiness_only or why_not == Refusal.MAX_RESPONSES
    if participant is None or not history or not wanted:
        return TurnResult(TurnOutcome.NOTHING_TO_END) if turn.readiness_only else None
    if scene.turn_based and why_not:
        _skip_silently(scene, public)
    ready = _ask_readiness(scene, participant, public.current_discussion_id)
    if turn.readiness_only:
        return TurnResult(TurnOutcome.READINESS_ONLY, ready)
    if why_not and _nobody_may_answer(scene, history, public, why_not):
        return TurnResult(why_not, Readiness.ASKED_EVERYONE)
    return _pass_on(scene, TurnResult(why_not or TurnOutcome.READINESS_ONLY, ready))


def _not_now(scene: Scene, history: list[ChatMessage], public: ChatPublicData) -> TurnResult | None:
    """Not its turn (turn-based), or a gate says no: a turn holder that may not speak passes
    the turn on; a declining agent hands the message on."""
    if scene.turn_based and public.current_turn_participant_id != scene.agent.public_id:
        return TurnResult(TurnOutcome.NOT_MY_TURN)
    why_not = _refusal(scene, history, public)
    if why_not is None:
        return None
    if scene.turn_based and why_not not in gates.STALE:
        _skip_silently(scene, public)
    if _nobody_may_answer(scene, history, public, why_not):
        return TurnResult(why_not, Readiness.ASKED_EVERYONE)
    return _pass_on(scene, TurnResult(why_not))


def _nobody_may_answer(
    scene: Scene, history: list[ChatMessage], public: ChatPublicData, why_not: Refusal
) -> bool:
    """If nobody may answer the message (``quiet``), everyone present is asked at once whether
    they are ready to end, instead of the chat waiting for the idle watchdog. The policy says
    which one turn of the message checks."""
    if not scene.policy.asks_who_is_ready(scene.turn, why_not):
        return False
    present = quiet.nobody_may_answer(scene.room, scene.stage, history, scene.turn)
    if present is None:
        return False
    message_id = scene.turn.trigger_chat_id
    quiet.ask_who_is_ready(scene.room, scene.stage, public, history, message_id, present)
    return True


def _respond(scene: Scene, history: list[ChatMessage], public: ChatPublicData) -> TurnResult:
    """Claim (if the policy says so), ask the model, speak; then readiness to end."""
    turn, agent = scene.turn, scene.agent
    with _claimed(scene) as held:
        if not held.taken:
            return TurnResult(TurnOutcome.ALREADY_CLAIMED)
        fixed = agent.settings.initial_message.strip() if turn.is_opening else ""
        seen = history if _first_read_decides(scene, history) else None
        try:
            decision = (
                Decision("initial message", True, fixed, False)
                if fixed
                else _ask(scene, scene.must_respond(history))
            )
        except (ModelError, AnswerFailed, DocumentError) as error:
            reason = _record(scene, error)
            if _provider_down(error):
                # waits like a stage move: the claim is released on the way out and
                # onAgentTurn, which is retried, runs the turn again
                raise ProviderUnavailable(reason) from error
            held.let_go()
            _after_failure(scene, public)
            return TurnResult(TurnOutcome.MODEL_FAILED)
        outcome = _speak(scene, decision, public, seen)
        if turn.is_opening:  # an agent opens a chat once, whatever it then does
            held.keep(mark_done=outcome != TurnOutcome.SPOKE)
        elif outcome == TurnOutcome.SPOKE:
            held.keep()
        held.let_go()  # before the message is handed on
    if outcome in (TurnOutcome.DECLINED, TurnOutcome.WRITE_REFUSED):
        scene.policy.hand_on(turn)
    participant = scene.participant
    if participant is None or not history or fixed or _beaten(scene, outcome):
        return TurnResult(outcome)
    thread = public.current_discussion_id
    return TurnResult(outcome, _readiness_after(scene, participant, decision, thread))


# ---- steps ---------------------------------------------------------------------------------


def _decision_reader(output: ChatStructuredOutputConfig | None, must_respond: bool) -> Any:
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


def _beaten(scene: Scene, outcome: TurnOutcome | Refusal) -> bool:
    """The reply lost to another answer (someone spoke after the message it answers, or won
    its election): the readiness decided with it is dropped too, since it was decided on a
    conversation that has moved on, and the message that beat it gives the agent a turn of its
    own to decide again. A turn-based holder keeps it: it may not get another turn soon."""
    beaten = (TurnOutcome.MOVED_ON_AFTER_DELAY, TurnOutcome.NOT_ELECTED, TurnOutcome.WRITE_REFUSED)
    return outcome in beaten and not scene.turn_based


def _readiness_after(
    scene: Scene, participant: ParticipantProfile, decision: Decision, thread: str | None
) -> Readiness | None:
    """Readiness after a turn in ``thread``: the separate query when the stage asks for it,
    else the reply's field; in a private chat, declining to answer means ready (DL)."""
    if scene.stage.readiness_query:
        return _ask_readiness(scene, participant, thread, occasion=f"after-{scene.turn.log_id}")
    declined_privately = scene.room.is_private and not decision.should_respond
    if decision.ready_to_end or declined_privately:
        return readiness.participant_ready(scene.room, scene.stage, participant, decided_in=thread)
    return None


def _responder(agent: ChatAgent) -> dict[str, Any]:
    return {"agentType": agent.type, "privateId": agent.private_id, "publicId": agent.public_id}


def _claimed(scene: Scene) -> contextlib.AbstractContextManager[messages.Lock]:
    """The message's claim for the answer: the one taken with the turn's first reads, or taken
    now if the policy claims (``needed``)."""
    if scene.claim is not None:
        return contextlib.nullcontext(scene.claim)
    turn = scene.turn
    return messages.lock(turn.room, turn.log_id, _responder(scene.agent), needed=scene.claims)


def _pass_on(scene: Scene, result: TurnResult) -> TurnResult:
    """A turn that will not answer hands the message to whoever its policy asks next (its
    claim, if it took one, let go first)."""
    if scene.claim is not None:
        scene.claim.let_go()
    scene.policy.hand_on(scene.turn)
    return result


def _after_failure(scene: Scene, public: ChatPublicData) -> None:
    """Nobody waits on a failed model: a mediator in a private chat posts DL's error message so
    the participant is not left waiting; the policy hands the message (or the turn) on."""
    if scene.room.is_private and scene.participant is None:
        messages.write(scene.room, _error_message(scene))
    scene.policy.after_failure(scene.turn, scene.agent, public.current_discussion_id)


def _skip_silently(scene: Scene, public: ChatPublicData) -> None:
    """A turn holder that may not speak (its gates say no) passes the turn on."""
    holder = public.current_turn_participant_id
    if isinstance(scene.stage, ChatStage) and holder == scene.agent.public_id:
        turn_order.skip(scene.room, scene.stage, scene.agent, public.current_discussion_id)


def _ask(scene: Scene, must_respond: bool) -> Decision:
    turn, stage, agent = scene.turn, scene.stage, scene.agent
    experiment, ctx = scene.prompt
    output = agent.config.structured_output_config
    chat_output = output if isinstance(output, ChatStructuredOutputConfig) else None
    schema = None
    if chat_output is not None and chat_output.enabled and chat_output.schema_ is not None:
        schema = schema_to_json_schema(chat_output.schema_)
        if must_respond:
            schema = without_should_respond(schema)
    text = render(agent.config, agent.config_path, ctx, schema)
    what = f"reply to {turn.trigger_chat_id}"
    if turn.is_opening:  # an opening asked again (``nonce``) is a call of its own
        what = f"opening message ({turn.nonce})" if turn.nonce else "opening message"
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


def _parse_for(output: ChatStructuredOutputConfig | None) -> Any:
    if output is None or not output.enabled:
        return lambda text: text
    return parse_json_reply


def _first_read_decides(scene: Scene, history: list[ChatMessage]) -> bool:
    """Whether the post may go on the turn's first read of the chat instead of reading it again
    after the model: a claim held on a reply in a group chat without threads or turns, in a
    cohort of agents only. Then what can come after the message that would make the reply
    stale is another agent's reply to it, and the post's own write fails if one came
    (``messages.post``: ``answered-``, the response slot, the author's ``left-`` lock): one
    round trip and a read of the chat fewer on the critical path. A person (in the cohort, so
    one who may come to the stage meanwhile) writes without those records, and a system
    message is answered only if nobody spoke after it: then the chat is read again, as under
    every other policy."""
    turn, stage = scene.turn, scene.stage
    if not scene.claims or turn.is_opening or scene.room.is_private:
        return False
    if not isinstance(stage, ChatStage) or stage.is_turn_based or stage.discussions:
        return False
    trigger = next((m for m in history if m.id == turn.trigger_chat_id), None)
    if trigger is None or not gates.is_reply(trigger):
        return False
    members = cohort_lock.members_shown(turn.experiment_id, turn.cohort_id)
    return all(m.is_agent for m in members)


def _answers_a_message(scene: Scene) -> bool:
    """A group chat reply whose post writes the message's ``answered-`` record."""
    turn = scene.turn
    return not scene.room.is_private and not scene.turn_based and bool(turn.trigger_chat_id)


def _refused(scene: Scene) -> TurnOutcome:
    """A reply's post that its own write refused: another reply to the message came
    first (its ``answered-`` record: not elected), or not (``WRITE_REFUSED``): the author's
    leaving lock stands, or another turn of its took the response slot. Nobody answered the
    message, so it is handed on; a leaving lock whose holder died is released here (once
    expired), so it does not refuse the agent's replies until the chat goes idle."""
    room, turn = scene.room, scene.turn
    if messages.answered(room, messages.ANSWERED_PREFIX + turn.trigger_chat_id):
        return TurnOutcome.NOT_ELECTED
    messages.release_unfinished(room, messages.left_lock_id(scene.agent.private_id))
    return TurnOutcome.WRITE_REFUSED


def _speak(
    scene: Scene, decision: Decision, public: ChatPublicData, seen: list[ChatMessage] | None
) -> TurnOutcome | Refusal:
    """Post the decision after the typing delay if it wins its election (``at_post``), unless
    the chat moved on meanwhile (its history read again; its public data too when it has
    threads, the one thing in it that says whether the discussion moved on). ``seen``: the
    chat as first read, when that decides (``_first_read_decides``)."""
    turn, room, agent = scene.turn, scene.room, scene.agent
    if not decision.should_respond or not decision.message:
        if room.is_private and scene.participant is None:
            _post_decline(scene)
        return TurnOutcome.DECLINED
    rng = random.Random(f"{turn.agent_id}:{turn.trigger_chat_id}")
    delay = typing_delay_s(decision.message, agent.settings.words_per_minute, rng)
    if delay:
        time.sleep(delay)
    read: Callable[[], Again] = functools.partial(_read_again, scene, public)
    if seen is not None:
        read = functools.partial(_as_seen, seen, public)
    beside = reads.start(read) if scene.policy.reads_beside_election(room, turn) else None
    try:
        with scene.policy.at_post(room, turn, _responder(agent)) as ballot:
            if not ballot.won:
                return TurnOutcome.NOT_ELECTED
            again = beside() if beside is not None else read()
            beside = None  # the post's now: it ends the transaction the read began
            outcome = _post_if_wanted(scene, decision, again, named_in=ballot.named_in)
            if outcome == TurnOutcome.SPOKE:
                ballot.keep()
            elif outcome == TurnOutcome.NOT_ELECTED and _answers_a_message(scene):
                outcome = _refused(scene)
            return outcome
    finally:
        if beside is not None:
            _drop(beside)


def _as_seen(seen: list[ChatMessage], public: ChatPublicData) -> Again:
    return seen, public, None


def _drop(read: Callable[[], Again]) -> None:
    """A read made beside an election the turn lost: its transaction, if it began one, ends."""
    try:
        _, _, thread_read = read()
    except Exception:  # the read failed: nothing to end, and the lost election is the outcome
        return
    if thread_read is not None:
        thread_read.close()


Again = tuple[list[ChatMessage], ChatPublicData, transactions.Begun | None]
"""The chat read again after the model answered (``_read_again``)."""


def _post_if_wanted(
    scene: Scene, decision: Decision, again: Again, named_in: str | None = None
) -> TurnOutcome | Refusal:
    """Post unless the chat moved on while the model answered (``again``: read since)."""
    turn, agent = scene.turn, scene.agent
    history, public, thread_read = again
    with thread_read or contextlib.nullcontext():
        if gates.stale(agent, history, turn.trigger_chat_id, public.current_discussion_id):
            return TurnOutcome.MOVED_ON_AFTER_DELAY
        slot = len(gates.own(history, agent)) + 1
        limit = agent.settings.max_responses
        if limit is not None and slot > limit:  # another turn of this agent spoke meanwhile
            return Refusal.MAX_RESPONSES
        message = _message(scene, public, decision, slot)
        return _post(scene, message, history, slot, named_in, thread_read)


def _read_again(scene: Scene, public: ChatPublicData) -> Again:
    """The history after the model's call, and the public data if it can have moved on: a
    group chat's threads, read at the same time (a private chat's comes from its history).
    With threads, the post's transaction begins beside them with its read of the thread
    marker (``messages.post``); the caller ends it."""
    room = scene.room
    if room.is_private:
        history = rooms.history(room)
        return history, rooms.state(room, history), None
    members = _members(scene.turn)
    if not scene.threaded:
        return rooms.history(room, members), public, None
    if scene.turn_based:  # its post is the turn order's transaction
        history, public = reads.together(
            lambda: rooms.history(room, members), lambda: rooms.group_state(room)
        )
        return history, public, None
    begun: list[transactions.Begun] = []

    def begin() -> transactions.Begun:
        begun.append(messages.read_thread(room))
        return begun[-1]

    try:
        thread_read, history, public = reads.three(
            begin, lambda: rooms.history(room, members), lambda: rooms.group_state(room)
        )
    except BaseException:
        for opened in begun:  # ``begin`` runs first: done by the time another read fails
            opened.close()
        raise
    return history, public, thread_read


POSTED: dict[messages.Posted, TurnOutcome | Refusal] = {
    messages.Posted.POSTED: TurnOutcome.SPOKE,
    messages.Posted.ANSWERED: TurnOutcome.NOT_ELECTED,
    messages.Posted.THREAD_MOVED: Refusal.THREAD_CHANGED,
}


def _post(
    scene: Scene,
    message: ChatMessage,
    history: list[ChatMessage],
    slot: int,
    named_in: str | None,
    thread_read: transactions.Begun | None,
) -> TurnOutcome | Refusal:
    answers = scene.turn.trigger_chat_id if _answers_a_message(scene) else None
    reply = election.Reply(
        message, _responder(scene.agent), slot, history, named_in, thread_read, answers
    )
    return POSTED[scene.policy.post(scene.room, reply)]


def _post_decline(scene: Scene) -> None:
    """A mediator declining in a private chat writes no message of its own; a notice (elected
    like a reply, so one per message) tells the participant, human or agent, that nothing is
    coming, and triggers an agent participant to go on or end (DL #938, #1011)."""
    name = scene.agent.profile.name or "The mediator"
    notice = messages.system_message(
        DECLINED.format(name=name),
        None,
        messages.message_id(scene.room, "declined", scene.turn.log_id),
        **{messages.DECLINED_FIELD: scene.agent.public_id},
    )
    if not scene.turn.is_opening:
        messages.post(
            scene.room, notice, _responder(scene.agent), election=scene.turn.log_id, slot=None
        )


def _error_message(scene: Scene) -> ChatMessage:
    """DL's sendErrorPrivateChatMessage: one per failed turn (a re-run of it writes it again)."""
    agent, turn = scene.agent, scene.turn
    profile = agent.profile
    return ChatMessage(
        id=messages.message_id(scene.room, "error", agent.private_id, turn.log_id, turn.nonce),
        type=UserType(agent.type),
        message="Error fetching response",
        timestamp=now(),
        profile=ProfileBase(name=profile.name, avatar=profile.avatar),
        sender_id=agent.public_id,
        agent_id=profile.agent_config.agent_id if profile.agent_config else "",
        is_error=True,
    )


def _message(scene: Scene, public: ChatPublicData, decision: Decision, slot: int) -> ChatMessage:
    """The agent's message in its response ``slot`` (its id names the author and the slot: one
    message each, ``messages.post``)."""
    profile = scene.agent.profile
    # as ``_respond`` acts on it: an agent participant's reply, not an opening
    acted_on = scene.participant is not None and not scene.turn.is_opening
    said_ready = decision.ready_to_end and acted_on and not scene.stage.readiness_query
    ready: dict[str, Any] = {}
    if said_ready and not scene.room.is_private:
        ready[messages.SAID_READY_FIELD] = True
    return ChatMessage(
        **ready,
        id=messages.message_id(scene.room, "said", profile.private_id, slot),
        discussion_id=public.current_discussion_id if scene.threaded else None,
        type=UserType(scene.agent.type),
        message=decision.message,
        timestamp=now(),
        profile=ProfileBase(name=profile.name, avatar=profile.avatar, pronouns=profile.pronouns),
        sender_id=profile.public_id,
        agent_id=profile.agent_config.agent_id if profile.agent_config else "",
        explanation=decision.explanation,
    )


def _ask_readiness(
    scene: Scene, participant: ParticipantProfile, thread: str | None, occasion: str = ""
) -> Readiness:
    """Ask only whether the agent is ready to end ``thread`` (the seed's checkReadyToEndChat);
    no chat message. An agent that may not speak (maxResponses used up) is asked once per
    thread, so it never holds a thread back; the watchdog asks again when the chat goes
    quiet."""
    turn, room = scene.turn, scene.room
    if not occasion:
        occasion = turn.nonce or f"exhausted-{thread or 'chat'}"
    lock = f"ready-{participant.private_id}-{occasion}"
    with messages.lock(room, lock, _responder(scene.agent)) as held:
        if not held.taken:
            return Readiness.ALREADY_ASKED
        experiment, ctx = scene.prompt
        text = render(scene.agent.config, scene.agent.config_path, ctx, None)
        site = CallSite(
            turn.experiment_id, participant, scene.stage.id, f"chat readiness query ({occasion})"
        )
        try:
            ready = ask(
                site,
                text + "\n\n" + READINESS_PROMPT,
                READINESS_SCHEMA,
                lambda reply: (
                    bool(reply.get("readyToEndChat")) if isinstance(reply, dict) else False
                ),
                retries=1,
                api_keys=creator_api_keys(experiment),
            )
        except (ModelError, AnswerFailed) as error:
            _record(scene, error)
            if not _provider_down(error):
                held.keep()  # a provider still failing leaves it to be asked again
            return Readiness.QUERY_FAILED
        held.keep()
    if not ready:
        return Readiness.NOT_READY
    return readiness.participant_ready(room, scene.stage, participant, decided_in=thread)


def _provider_down(error: Exception) -> bool:
    """A provider still failing after the call's retries: an outage, not the model's answer."""
    return isinstance(error, ModelError) and error.retryable


def _record(scene: Scene, error: Exception) -> str:
    """Record the failure under the agent's document; returns the reason recorded."""
    if isinstance(error, DocumentError):
        record_error(FUNCTION, error)
        return error.reason
    turn, agent = scene.turn, scene.agent
    document = (
        store.participant_path(turn.experiment_id, agent.private_id)
        if agent.type == "participant"
        else agents.mediator_path(turn.experiment_id, agent.private_id)
    )
    field = getattr(error, "field", None) or "agentConfig.modelSettings"
    status = f"{error.status}: " if isinstance(error, ModelError) else ""
    reason = f"chat stage {turn.stage_id!r}: {status}{error}"
    if _provider_down(error) and not turn.readiness_only:
        reason += "; the turn will be retried"
    record_error(FUNCTION, DocumentError(document, field, reason))
    return reason
