"""The conductor election policy (``electionPolicy: "conductor"``): after each message one
conductor call picks which agent (participant or mediator) speaks next, from their personas and
the recent chat, and only that agent is asked. It may still decline; then the conductor is told
and picks again among the others, at most ``DLAB_CHAT_CONDUCTOR_MAX_PICKS`` times per message.
When nobody may be asked (all gated: responses used up, the author), the agent participants
present are asked whether they are ready to end instead (``quiet``, as under race); when the
picks are used up by declines, the chat waits like a race chat whose agents all declined.

Once per message and round: the pick takes ``triggerLogs/conductor-{message}-{round}`` by
atomic create, and records the agent it picked in ``triggerLogs/conductor-{message}``; a turn
whose agent is no longer the pick (a late duplicate) does nothing. The picked agent claims the
message like the claim policy, so at most one agent answers it.
"""

from __future__ import annotations

import random
from typing import Any

from functions import rooms, store
from functions.agents.model_call import AnswerFailed, CallSite, ask
from functions.agents.prompting import creator_api_keys
from functions.chat import agents, gates, messages, quiet
from functions.chat.agents import ChatAgent
from functions.chat.settings import chat_settings
from functions.errors import current_function, record_error
from functions.pubsub import publish
from functions.registry import CHAT_CONDUCTOR_TOPIC
from functions.rooms import Room
from functions.wire import AgentTurn, WireMessage, publish_turns
from shared import paths
from shared.llm import ModelError
from shared.models import (
    ChatMessage,
    ChatStage,
    DocumentError,
    Experiment,
    MediatorProfile,
    ProfileAgentConfig,
)
from shared.prompts import render_template
from shared.stages import AnswerValidationError

HISTORY = 12
"""The last messages the conductor sees."""
CONDUCTOR_ID = "conductor"

PROMPT = """\
You are the conductor of a group chat. You do not write messages yourself: after each message
you pick the one member who should speak next, so that the discussion moves forward and
everyone's role is respected.
The members you may pick:
{% for m in members %}
- {{ m.id }}: {{ m.name }} ({{ m.type }}){% if m.persona %}: {{ m.persona }}{% endif %}

{% endfor %}
The chat so far (latest last):
{% for line in history %}
{{ line }}
{% endfor %}
{% if declined %}
Already asked for the latest message, and declined to answer: {{ declined | join(", ") }}.
{% endif %}
Reply with the id of the member who should answer the latest message (next_speaker) and why
(explanation)."""


class ConductorPick(WireMessage):
    """Pick who answers ``trigger_chat_id`` (a ``chat-conductor`` message)."""

    experiment_id: str
    cohort_id: str
    stage_id: str
    trigger_chat_id: str
    declined: tuple[str, ...] = ()
    """The agents (``type:privateId``) that declined the message already."""

    @property
    def room(self) -> Room:
        return Room(self.experiment_id, self.cohort_id, self.stage_id)


def seat(agent_type: str, private_id: str) -> str:
    """How a declined agent is named in ``declined``: a mediator's id is not a participant's."""
    return f"{agent_type}:{private_id}"


def pick_record(message_id: str) -> str:
    return f"conductor-{message_id}"


def request(room: Room, message: ChatMessage, declined: tuple[str, ...] = ()) -> int:
    """Ask the conductor to pick who answers ``message``."""
    pick = ConductorPick(
        experiment_id=room.experiment_id,
        cohort_id=room.cohort_id,
        stage_id=room.stage_id,
        trigger_chat_id=message.id,
        declined=declined,
    )
    publish(CHAT_CONDUCTOR_TOPIC, pick.to_json())
    return 1


def after_decline(turn: AgentTurn) -> None:
    """The picked agent did not answer: the conductor is told and picks again (bounded)."""
    declined = (*turn.declined, seat(turn.agent_type, turn.agent_id))
    message = ChatMessage(id=turn.trigger_chat_id)
    request(turn.room, message, declined)


def still_picked(turn: AgentTurn) -> bool:
    """Is this turn's agent the conductor's current pick for its message?"""
    data = store.snapshot_data(turn.room.log_path(pick_record(turn.trigger_chat_id))) or {}
    return data.get("picked") == turn.agent_id


def pick(request: ConductorPick) -> str:
    """Pick once per message and round; publish the picked agent's turn. Returns what it did.
    The round's lock is kept once done, and released if the pick fails (the retry picks)."""
    lock_id = f"{pick_record(request.trigger_chat_id)}-{len(request.declined)}"
    with messages.lock(request.room, lock_id, {}) as held:
        if not held.taken:
            return "already picked"
        outcome = _pick(request)
        held.keep()
    return outcome


def _pick(request: ConductorPick) -> str:
    room, round_ = request.room, len(request.declined)
    stage = store.read_stage(room.experiment_id, room.stage_id)
    if not isinstance(stage, ChatStage):
        return "not a group chat"
    history = rooms.history(room)
    message = next((m for m in history if m.id == request.trigger_chat_id), None)
    if history and history[-1].id != request.trigger_chat_id:
        return "the chat has moved on"  # a newer message gets its own pick
    if round_ >= chat_settings().chat_conductor_max_picks:
        return "picks used up"  # they all declined: as under race, the idle watchdog nudges
    members = _members(room, stage, history, message, request)
    if not members:  # nobody may answer: those present say whether they are ready instead
        public = rooms.state(room, history)
        asked = quiet.ask_who_is_ready(room, stage, public, history, request.trigger_chat_id)
        return f"nobody to pick; {asked} asked whether ready"
    chosen = members[0] if len(members) == 1 else _choose(room, stage, members, history, request)
    store.ref(room.log_path(pick_record(request.trigger_chat_id))).set(
        {"picked": chosen.private_id, "round": round_, "declined": list(request.declined)}
    )
    publish_turns(
        AgentTurn.in_room(
            room,
            chosen.type,
            chosen.private_id,
            trigger_chat_id=request.trigger_chat_id,
            conducted=True,
            declined=request.declined,
        )
    )
    return f"picked {chosen.type} {chosen.private_id} (round {round_})"


def _members(
    room: Room,
    stage: ChatStage,
    history: list[ChatMessage],
    message: ChatMessage | None,
    request: ConductorPick,
) -> list[ChatAgent]:
    """The agents that may answer: present, not the author, not declined already, and not
    stopped by a gate (responses used up, too few messages yet)."""
    ids = [("participant", p) for p in agents.participants_at(*_where(room))]
    ids += [("mediator", m) for m in agents.mediators_of(room.experiment_id, room.cohort_id, stage)]
    found = []
    for kind, private_id in ids:
        if seat(kind, private_id) in request.declined:
            continue
        agent = agents.load(room.experiment_id, kind, private_id, stage)
        if agent is None or (message is not None and agent.public_id == message.sender_id):
            continue
        if gates.refusal(agent, history) is not None:
            continue
        found.append(agent)
    return found


def _where(room: Room) -> tuple[str, str, str]:
    return room.experiment_id, room.cohort_id, room.stage_id


def _persona(room: Room, agent: ChatAgent) -> str:
    config = agent.profile.agent_config
    if config is None:
        return ""
    pattern = (
        paths.AGENT_MEDIATOR_PERSONA
        if agent.type == "mediator"
        else paths.AGENT_PARTICIPANT_PERSONA
    )
    persona: dict[str, Any] = {}
    if config.agent_id:
        path = paths.build(pattern, experimentId=room.experiment_id, personaId=config.agent_id)
        persona = store.snapshot_data(path) or {}
    parts = [str(persona.get("description") or ""), config.prompt_context]
    return " ".join(p.strip() for p in parts if p and p.strip())


def _choose(
    room: Room,
    stage: ChatStage,
    members: list[ChatAgent],
    history: list[ChatMessage],
    request: ConductorPick,
) -> ChatAgent:
    """One conductor call; a failing model falls back to a seeded random pick (recorded)."""
    by_id = {m.public_id: m for m in members}
    try:
        return _ask(room, stage, members, history, request, by_id)
    except (ModelError, AnswerFailed, DocumentError) as error:
        where = DocumentError(
            stage_path(room), "electionPolicy", f"conductor call failed, picked at random: {error}"
        )
        record_error(current_function(), where)
        return random.Random(f"{request.trigger_chat_id}:{len(request.declined)}").choice(members)


def stage_path(room: Room) -> str:
    return store.stage_path(room.experiment_id, room.stage_id)


def _ask(
    room: Room,
    stage: ChatStage,
    members: list[ChatAgent],
    history: list[ChatMessage],
    request: ConductorPick,
    by_id: dict[str, ChatAgent],
) -> ChatAgent:
    declined_names = [_name_of(room, stage, seat) for seat in request.declined]
    variables = {
        "members": [
            {
                "id": m.public_id,
                "name": m.profile.name or m.public_id,
                "type": m.type,
                "persona": _persona(room, m),
            }
            for m in members
        ],
        "history": [f"{m.profile.name or m.sender_id}: {m.message}" for m in history[-HISTORY:]],
        "declined": declined_names,
    }
    prompt = render_template(PROMPT, variables, "chat conductor prompt")
    schema = {
        "type": "object",
        "properties": {
            "next_speaker": {"type": "string", "enum": sorted(by_id)},
            "explanation": {"type": "string"},
        },
        "required": ["next_speaker", "explanation"],
    }

    def validate(parsed: Any) -> ChatAgent:
        chosen = parsed.get("next_speaker") if isinstance(parsed, dict) else None
        if chosen not in by_id:
            raise AnswerValidationError(f"next_speaker must be one of {sorted(by_id)}")
        return by_id[chosen]

    experiment = store.read(Experiment, store.experiment_path(room.experiment_id))
    site = CallSite(
        room.experiment_id,
        _conductor(room, members),
        stage.id,
        f"chat reply to {request.trigger_chat_id}",
    )
    return ask(site, prompt, schema, validate, retries=2, api_keys=creator_api_keys(experiment))


def _name_of(room: Room, stage: ChatStage, declined: str) -> str:
    kind, _, private_id = declined.partition(":")
    agent = agents.load(room.experiment_id, kind, private_id, stage)
    return (agent.profile.name or agent.public_id) if agent else private_id


def _conductor(room: Room, members: list[ChatAgent]) -> MediatorProfile:
    """Who the conductor's call is logged as; it runs on the first member's model."""
    config = members[0].profile.agent_config
    assert config is not None  # an agent has one
    return MediatorProfile(
        private_id=CONDUCTOR_ID,
        public_id=CONDUCTOR_ID,
        name="Conductor",
        current_cohort_id=room.cohort_id,
        agent_config=ProfileAgentConfig(
            agent_id=CONDUCTOR_ID, model_settings=config.model_settings
        ),
    )
