"""Who answers a group chat message: the election policies, one class each, behind one protocol.

A stage's policy is chosen once (``policy_for``) from its settings: ``isTurnBased`` first, then
``electionPolicy``. The fan-out, the turn and the quiet check ask the policy object what to do
and never look at the setting themselves, so how a reply is elected reads in this one file:

- race (DL's default): every eligible agent is asked; the first answer ready takes the message's
  election record at post time and the others stop there.
- claim: one agent is asked, the first of a seeded order (the mediators, then the participants);
  it claims the message before its model call, and hands the message to the next in the order
  if it does not answer (at the order's end, to whoever came since it was drawn).
- conductor: one conductor call picks the agent to ask (``conducted``); it claims the message
  like the claim policy, and a decline asks the conductor to pick again.
- turn-based (DL): only the turn holder answers; its post moves the turn in one transaction
  (``turn_order``) and a failed model call skips it.

The watchdog re-drives a message whose claim died by fanning it out again (``fanout.fan_out``),
which asks the same policy; under claim, a message whose turn was lost (a claim that died, a
fan-out or a hand-on lost with its invocation) goes to the next agent of its order that has not
passed it on (``Claim.next_unasked``, ``messages.passed_by``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from functions import transactions
from functions.chat import agents, conducted, gates, messages, turn_order
from functions.chat.gates import Refusal
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns
from shared.models import ChatMessage, ChatStage, StageConfig

Asked = dict[str, list[str]]
"""Who may be asked, by agent type (``participant``, ``mediator``)."""
Groups = Callable[[], Asked]
"""Who may be asked, read when first needed."""


@dataclasses.dataclass
class Ballot:
    """A reply's election at post time: whether it won, and the election record it holds
    (``named_in``, to name the message in), or None when the turn claimed it before its model."""

    won: bool
    named_in: str | None = None
    lock: messages.Lock | None = None

    def keep(self) -> None:
        """The reply was posted: its election record stays."""
        if self.lock is not None:
            self.lock.keep()


class ElectionPolicy(Protocol):
    """What the chat pipeline asks of a stage's election policy."""

    asks_everyone: bool
    """The fan-out asks the agents themselves, so it needs who is in the chat (read beside the
    stage in the trigger's first round trip, ``fanout.read_members``)."""
    opened_by_mediators: bool
    """A chat with mediators is opened by them alone (``fanout.request_openings``): agent
    participants' openings would race theirs, and the order they land in is timing."""

    def fan_out(
        self, room: Room, message: ChatMessage, groups: Groups, asked: Asked | None = None
    ) -> int:
        """Publish the turns a new message gets; returns how many. ``asked``: who was asked
        already, from the instance's memory of the chat (``fanout.ask_from_memory``): the
        fan-out publishes only what that missed."""
        ...

    def claims(self, turn: AgentTurn) -> bool:
        """Whether the turn takes the message's election record before its model call."""
        ...

    def at_post(
        self, room: Room, turn: AgentTurn, owner: dict[str, Any]
    ) -> contextlib.AbstractContextManager[Ballot]:
        """The reply's election when it is ready to post (held for the post)."""
        ...

    def reads_beside_election(self, room: Room, turn: AgentTurn) -> bool:
        """Whether the reply's read before its post goes beside its election at post time (a
        round trip each, independent): only a turn that will try the election itself, since
        a losing turn's read is for nothing."""
        ...

    def post(self, room: Room, reply: Reply) -> messages.Posted:
        """Write the elected reply."""
        ...

    def hand_on(self, turn: AgentTurn) -> None:
        """The turn's agent did not answer (declined, gated, gone): who is asked next."""
        ...

    def after_failure(self, turn: AgentTurn, agent: agents.ChatAgent, thread: str | None) -> None:
        """The turn's model call failed for good: nobody may wait on it."""
        ...

    def asks_who_is_ready(self, turn: AgentTurn, why_not: Refusal) -> bool:
        """Whether this turn, whose agent may not answer, is the one that checks whether anyone
        may (``quiet``); at most one turn of a message does."""
        ...


@dataclasses.dataclass(frozen=True)
class Reply:
    """An agent's message ready to post, and what its post checks."""

    message: ChatMessage
    responder: dict[str, Any]
    slot: int | None
    history: list[ChatMessage]
    """The chat as the agent last read it."""
    named_in: str | None = None
    thread_read: transactions.Begun | None = None
    answers: str | None = None
    """The group chat message it answers (``messages.post``'s ``answers``)."""


def policy_for(stage: StageConfig) -> ElectionPolicy:
    """The stage's policy, read from its settings once. A private chat, or any stage that is not
    a group chat, elects like race: its turns claim only openings and elect at post time."""
    if not isinstance(stage, ChatStage):
        return Race(None)
    if stage.is_turn_based:
        return TurnBased(stage)
    policies: dict[str, type[Race | Claim | Conductor]] = {
        "race": Race,
        "claim": Claim,
        "conductor": Conductor,
    }
    return policies[stage.election_policy](stage)


def seeded_order(seed: str, ids: Sequence[str]) -> list[str]:
    """``ids`` in an order drawn from ``seed``: each ranked by a digest of the seed and its own
    id, so the order of any two does not depend on who else is in the list. Whether an agent
    that left is still in a fan-out's list of who is in the chat is timing; who of those
    present comes first is not."""
    return sorted(ids, key=lambda i: hashlib.sha256(f"{seed}\x1f{i}".encode()).hexdigest())


def claims_from_the_start(turn: AgentTurn) -> bool:
    """Whether the turn says itself that its policy claims the message (a claim turn carries
    the order it was asked in), so that its claim can be taken beside its first reads. The
    stage's policy, read with them, has the last word."""
    return bool(turn.order) and not (turn.is_opening or turn.conducted or turn.readiness_only)


def _may_ask_everyone(turn: AgentTurn, why_not: Refusal) -> bool:
    """A group chat message's turn that was not overtaken by the chat (a stale turn asks
    nothing: the chat moved on)."""
    return not turn.room.is_private and bool(turn.trigger_chat_id) and why_not not in gates.STALE


@dataclasses.dataclass(frozen=True)
class Race:
    """Every eligible agent is asked; the first answer ready takes the message."""

    stage: ChatStage | None
    asks_everyone = True
    opened_by_mediators = False

    def fan_out(
        self, room: Room, message: ChatMessage, groups: Groups, asked: Asked | None = None
    ) -> int:
        before = asked or {}
        turns = [
            turn
            for agent_type, ids in groups().items()
            for turn in self._turns_for(room, message, agent_type, ids, before.get(agent_type, []))
        ]
        publish_turns(*turns)
        return len(turns)

    def _turns_for(
        self,
        room: Room,
        message: ChatMessage,
        agent_type: str,
        ids: list[str],
        asked: Sequence[str] = (),
    ) -> list[AgentTurn]:
        """Each agent of the type not asked already."""
        return [
            AgentTurn.in_room(room, agent_type, i, trigger_chat_id=message.id)
            for i in ids
            if i not in asked
        ]

    def claims(self, turn: AgentTurn) -> bool:
        return turn.is_opening  # an agent opens a chat once

    @contextlib.contextmanager
    def at_post(self, room: Room, turn: AgentTurn, owner: dict[str, Any]) -> Iterator[Ballot]:
        """The first of the type whose answer is ready takes the election record (as a lock);
        the others stop here. A message's turns call the model at once and their answers come
        back together, so the losers lose on this instance's try, without one of their own
        (``messages.take_election``)."""
        if self.claims(turn):
            yield Ballot(True)
            return
        with messages.lock(room, turn.log_id, owner, take=messages.take_election) as held:
            yield Ballot(held.taken, turn.log_id, held)

    def reads_beside_election(self, room: Room, turn: AgentTurn) -> bool:
        """A turn elected at post time that no other turn of this instance has tried the
        election for (one that has loses on that try)."""
        return not self.claims(turn) and not messages.election_tried_here(room, turn.log_id)

    def post(self, room: Room, reply: Reply) -> messages.Posted:
        return messages.post(
            room,
            reply.message,
            reply.responder,
            election=None,
            slot=reply.slot,
            named_in=reply.named_in,
            thread_read=reply.thread_read,
            answers=reply.answers,
        )

    def hand_on(self, turn: AgentTurn) -> None:
        return None  # every agent was asked

    def after_failure(self, turn: AgentTurn, agent: agents.ChatAgent, thread: str | None) -> None:
        self.hand_on(turn)

    def asks_who_is_ready(self, turn: AgentTurn, why_not: Refusal) -> bool:
        """Every agent message gets a turn of its author's, which cannot answer it: that one."""
        if self.stage is None or not _may_ask_everyone(turn, why_not):
            return False
        return why_not == Refusal.OWN_MESSAGE


@dataclasses.dataclass(frozen=True)
class Claim(Race):
    """One agent is asked, in a seeded order (the mediators, then the participants); it claims
    the message first (one model call per message, not one per agent) and hands it on if it
    does not answer. Who speaks is the seed's, not the fastest's: so its mediators alone open
    it."""

    opened_by_mediators = True

    def fan_out(
        self, room: Room, message: ChatMessage, groups: Groups, asked: Asked | None = None
    ) -> int:
        """One turn: the first of the message's order, which it carries so that a declining
        agent can hand on: the mediators, then the participants, each in a seeded order
        (``seeded_order``). One at a time, so which reply answers the message is the order's,
        not the fastest's (asked at once, a mediator's and a participant's reply raced for it,
        and the loser's call was paid for nothing). None if the message was asked already (its
        order, from memory, ``fanout.ask_from_memory``, is the message's: a second would ask
        an agent twice), or if it is a notice (someone left, the timer ended): it needs no
        answer, and one would race the answer to the message before it, since a departure
        lands when its leave commits."""
        if messages.is_notice(message):
            return 0
        present = groups()  # read (beside the stage) all the same: it refreshes the memory
        if any((asked or {}).values()):
            return 0
        first = self.first_turn(room, message, present)
        if first is None:
            return 0
        publish_turns(first)
        return 1

    @staticmethod
    def first_turn(room: Room, message: ChatMessage, present: Asked) -> AgentTurn | None:
        """The message's first turn, which carries its order (None if nobody may be asked)."""
        mediators = seeded_order(message.id, present.get("mediator", []))
        participants = seeded_order(message.id, present.get("participant", []))
        kind, order, after = ("mediator", mediators, participants)
        if not mediators:
            kind, order, after = ("participant", participants, [])
        if not order:
            return None
        return AgentTurn.in_room(
            room,
            kind,
            order[0],
            trigger_chat_id=message.id,
            order=tuple(order),
            participants_after=tuple(after),
        )

    @classmethod
    def next_unasked(
        cls, room: Room, message: ChatMessage, present: Asked, passed: set[tuple[str, str]]
    ) -> AgentTurn | None:
        """The turn of the first agent present in the message's order that has not passed it
        on (``messages.passed_by``), or None if the order ran out: what the watchdog hands the
        message on to when its turn was lost (``watchdog``). The order is drawn from who is
        present now, as the fan-out draws it (``seeded_order``: the same for those present)."""
        turn = cls.first_turn(room, message, present)
        while turn is not None and (turn.agent_type, turn.agent_id) in passed:
            turn = turn.next_in_order()
        return turn

    def claims(self, turn: AgentTurn) -> bool:
        return True

    @contextlib.contextmanager
    def at_post(self, room: Room, turn: AgentTurn, owner: dict[str, Any]) -> Iterator[Ballot]:
        yield Ballot(True)  # claimed before the model call

    def hand_on(self, turn: AgentTurn) -> None:
        """The next in the order; at its end, whoever of the type came to the chat since the
        order was drawn (by the fan-out, or from an instance's memory of the chat,
        ``fanout.ask_from_memory``), so nobody who may answer is left out. Each is asked once,
        and the read is made only when an order runs out."""
        following = turn.next_in_order() or self._newcomers(turn)
        if following is not None:
            publish_turns(following)

    def _newcomers(self, turn: AgentTurn) -> AgentTurn | None:
        if turn.is_opening or not turn.order or self.stage is None:
            return None
        room = turn.room
        if turn.agent_type == "mediator":
            present = agents.mediators_of(room.experiment_id, room.cohort_id, self.stage)
        else:
            present = agents.participants_at(room.experiment_id, room.cohort_id, room.stage_id)
        new = seeded_order(turn.trigger_chat_id, [i for i in present if i not in turn.order])
        if not new:
            return None
        return turn.model_copy(update={"agent_id": new[0], "order": (*turn.order, *new)})

    def asks_who_is_ready(self, turn: AgentTurn, why_not: Refusal) -> bool:
        """The last agent of the order, so one earlier in it that declined (it may speak, it
        chose not to) leaves the question to the watchdog."""
        if not _may_ask_everyone(turn, why_not):
            return False
        return bool(turn.order) and turn.next_in_order() is None


@dataclasses.dataclass(frozen=True)
class Conductor(Claim):
    """A conductor call picks the one agent to ask (``conducted``); it claims the message like
    the claim policy, and a decline asks the conductor to pick again (bounded)."""

    asks_everyone = False
    opened_by_mediators = False

    def fan_out(
        self, room: Room, message: ChatMessage, groups: Groups, asked: Asked | None = None
    ) -> int:
        return conducted.request(room, message)

    def hand_on(self, turn: AgentTurn) -> None:
        if turn.conducted:  # an opening was not picked
            conducted.after_decline(turn)

    def asks_who_is_ready(self, turn: AgentTurn, why_not: Refusal) -> bool:
        return False  # the conductor picks again, or asks when nobody may answer


@dataclasses.dataclass(frozen=True)
class TurnBased(Claim):
    """Only the turn holder answers; its post moves the turn in the same transaction."""

    stage: ChatStage
    asks_everyone = False

    def fan_out(
        self, room: Room, message: ChatMessage, groups: Groups, asked: Asked | None = None
    ) -> int:
        """Move the turn if the message took it; then the holder, if an agent, answers. Agents
        passed over with their responses used up are asked only whether they are ready to
        end."""
        change = turn_order.on_message(room, self.stage, message)
        holder = change.holder
        # a notice (someone left, the timer ended) asks nothing of a holder that already has
        # its turn; it gets one only if the turn just came to it
        answers = holder is not None and holder.is_agent
        if messages.is_notice(message) and not change.handed_over:
            answers = False
        turns = [
            AgentTurn.in_room(room, holder.kind, holder.private_id, trigger_chat_id=message.id)
            for holder in ([holder] if answers and holder is not None else [])
        ]
        turns += [
            AgentTurn.in_room(
                room, s.kind, s.private_id, trigger_chat_id=message.id, readiness_only=True
            )
            for s in change.passed
            if s.kind == "participant"
        ]
        publish_turns(*turns)
        return len(turns)

    def post(self, room: Room, reply: Reply) -> messages.Posted:
        """The post is the turn order's transaction: written only in the sender's turn."""
        posted = turn_order.post_in_turn(
            room, self.stage, reply.message, reply.responder, None, reply.slot, reply.history
        )
        return messages.Posted.POSTED if posted else messages.Posted.ANSWERED

    def hand_on(self, turn: AgentTurn) -> None:
        return None  # the turn moves with the chat (``turn_order``)

    def after_failure(self, turn: AgentTurn, agent: agents.ChatAgent, thread: str | None) -> None:
        """The holder is skipped with a notice, which gives the next holder its turn."""
        turn_order.skip(turn.room, self.stage, agent, thread)

    def asks_who_is_ready(self, turn: AgentTurn, why_not: Refusal) -> bool:
        return False  # the turn passes to whoever may speak
