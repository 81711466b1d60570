"""The function registry: the single source of truth for every function and its trigger.

The entry points (functions/main.py), the local runtime (emulator/) and the deploy tool all read
this table; nothing else names a trigger path or topic.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from shared import paths

FirestoreEventKind = Literal["created", "updated", "deleted", "written"]


@dataclasses.dataclass(frozen=True)
class FirestoreTrigger:
    event: FirestoreEventKind
    document: str
    """Path pattern, ``{name}`` matching one segment."""

    @property
    def event_type(self) -> str:
        return f"google.cloud.firestore.document.v1.{self.event}"


@dataclasses.dataclass(frozen=True)
class PubSubTrigger:
    topic: str

    event_type = "google.cloud.pubsub.topic.v1.messagePublished"


@dataclasses.dataclass(frozen=True)
class ScheduleTrigger(PubSubTrigger):
    """A scheduled function: Cloud Scheduler publishes to ``topic`` on ``schedule``; locally the
    runtime publishes the ticks."""

    schedule: str = "every 1 minutes"


@dataclasses.dataclass(frozen=True)
class HttpTrigger:
    """An HTTP function: called at its URL, routes under ``path``."""

    path: str = "/"
    public: bool = False
    """Whether unauthenticated invocations are allowed (``--allow-unauthenticated``): true
    where the function checks its callers itself (the REST API's keys)."""


Trigger = FirestoreTrigger | PubSubTrigger | HttpTrigger


@dataclasses.dataclass(frozen=True)
class FunctionSpec:
    name: str
    trigger: Trigger
    handler: str
    """``module:function`` called with the decoded event (an HTTP function: the request)."""
    description: str
    timeout_s: int = 300
    memory: str = "1GiB"
    retry: bool = False
    max_instances: int | None = None
    concurrency: int = 1
    """Invocations one instance serves at once. Above 1 for functions that mostly wait on a
    model (a turn's seconds of I/O): one instance then serves several turns for the price of
    one, and the turns of one chat message share its reads."""
    cpu: str | None = None
    """vCPUs per instance; None lets Cloud Functions derive it from ``memory``. Concurrency
    above 1 needs at least one."""

    def __post_init__(self) -> None:
        if self.concurrency > 1 and (self.cpu is None or float(self.cpu) < 1):
            raise ValueError(f"{self.name}: concurrency {self.concurrency} needs cpu >= 1")
        if self.retry and isinstance(self.trigger, HttpTrigger):
            raise ValueError(f"{self.name}: an HTTP function is not retried (its caller is)")


AGENT_WAKE_TOPIC = "agent-wake"
AGENT_TURN_TOPIC = "agent-turn"
WATCHDOG_TOPIC = "watchdog-tick"
SOCIETY_TURN_TOPIC = "society-turn"
SOCIETY_TICK_TOPIC = "society-tick"
SOCIETY_CLOSE_TOPIC = "society-close-shard"
DEBATE_TURN_TOPIC = "debate-turn"
DEBATE_WATCHDOG_TOPIC = "debate-watchdog-tick"
CONDUCTOR_STEP_TOPIC = "conductor-step"
CONDUCTOR_TICK_TOPIC = "conductor-tick"
CONDUCTOR_BRANCH_TOPIC = "conductor-branch"
CHAT_CONDUCTOR_TOPIC = "chat-conductor"

REGISTRY: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        name="onParticipantCreated",
        trigger=FirestoreTrigger("created", paths.PARTICIPANT),
        handler="functions.triggers.participant:on_participant_created",
        description="Start an agent participant: timestamps, unlock check, first move.",
    ),
    FunctionSpec(
        name="onParticipantUpdated",
        trigger=FirestoreTrigger("updated", paths.PARTICIPANT),
        handler="functions.triggers.participant:on_participant_updated",
        description=(
            "completeStageAsAgentParticipant: one move per update (attention check, "
            "transfer, or complete the current stage); unlock check for humans too."
        ),
    ),
    FunctionSpec(
        name="onStageDataWritten",
        trigger=FirestoreTrigger("written", paths.STAGE_DATA),
        handler="functions.triggers.stage_data:on_stage_data_written",
        description="Mirror a participant's answer into the cohort's publicStageData.",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onCohortWritten",
        trigger=FirestoreTrigger("written", paths.COHORT),
        handler="functions.triggers.wake:on_cohort_written",
        description=(
            "Wake the agents waiting at a stage that just unlocked, and those blocked on the "
            "cohort document (one message each)."
        ),
        timeout_s=60,
    ),
    FunctionSpec(
        name="onStageWritten",
        trigger=FirestoreTrigger("written", paths.STAGE),
        handler="functions.triggers.wake:on_blocking_document_written",
        description="Wake the agents blocked on this stage document once it is created or fixed.",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onExperimentWritten",
        trigger=FirestoreTrigger("written", paths.EXPERIMENT),
        handler="functions.triggers.wake:on_blocking_document_written",
        description="Wake the agents blocked on the experiment document once it is written.",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onAgentPromptWritten",
        trigger=FirestoreTrigger("written", paths.AGENT_PARTICIPANT_PROMPT),
        handler="functions.triggers.wake:on_blocking_document_written",
        description="Wake the agent participants blocked on this persona prompt once it is "
        "written (a fixed template, a corrected setting).",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onChatMessageCreated",
        trigger=FirestoreTrigger("created", paths.CHAT),
        handler="functions.triggers.chat:on_chat_message_created",
        description=(
            "Fan-out: one agent-turn message per eligible agent participant and active mediator "
            "(claim policy: one, carrying a seeded order, mediators first; turn-based: the turn "
            "holder)."
        ),
        timeout_s=60,
    ),
    FunctionSpec(
        name="onPrivateChatMessageCreated",
        trigger=FirestoreTrigger("created", paths.PRIVATE_CHAT),
        handler="functions.triggers.chat:on_private_chat_message_created",
        description=(
            "Private chat fan-out: the cohort's active mediators answer the participant; an "
            "agent participant answers a mediator or its decline notice."
        ),
        timeout_s=60,
    ),
    FunctionSpec(
        name="onAgentTurn",
        trigger=PubSubTrigger(AGENT_TURN_TOPIC),
        handler="functions.triggers.chat:on_agent_turn",
        description=(
            "sendAgentParticipantMessage / checkReadyToEndChat: gates, one model call, typing "
            "delay, moved-on check, transactional election, readiness to end; retried while "
            "the model provider is still failing."
        ),
        retry=True,
        concurrency=8,
        cpu="1",
    ),
    FunctionSpec(
        name="watchdog",
        trigger=ScheduleTrigger(WATCHDOG_TOPIC, schedule="every 1 minutes"),
        handler="functions.triggers.chat:on_watchdog_tick",
        description=(
            "Ends chats whose timeLimitInMinutes passed (system message, agents move on), "
            "asks agents idle at a chat stage whether they are ready to end, and re-drives "
            "work an invocation lost: stalled moves, expired move leases, chats whose openings "
            "never came."
        ),
        timeout_s=120,
    ),
    FunctionSpec(
        name="onAgentWake",
        trigger=PubSubTrigger(AGENT_WAKE_TOPIC),
        handler="functions.triggers.wake:on_agent_wake",
        description=(
            "Make one move for a woken agent participant; also takes over a move stopped by a "
            "model provider still failing, retried until the provider recovers."
        ),
        retry=True,
    ),
    FunctionSpec(
        name="onSocietyWritten",
        trigger=FirestoreTrigger("written", paths.SOCIETY),
        handler="functions.triggers.society:on_society_written",
        description=(
            "Agent society: create the members and day 1 of a new society; open the next day "
            "when it is resumed or its last day raised."
        ),
    ),
    FunctionSpec(
        name="onSocietyActionCreated",
        trigger=FirestoreTrigger("created", paths.SOCIETY_ACTION),
        handler="functions.triggers.society:on_society_action_created",
        description=(
            "Agent society: once every acting member has acted (a count, no shared counter), "
            "start the day's sharded close exactly once (a conditional write on the day)."
        ),
    ),
    FunctionSpec(
        name="onSocietyCloseShard",
        trigger=PubSubTrigger(SOCIETY_CLOSE_TOPIC),
        handler="functions.triggers.society:on_society_close_shard",
        description=(
            "Agent society: one phase of a day's close for one shard of members; the last "
            "shard of a phase runs the society-level step and starts the next phase."
        ),
        retry=True,
    ),
    FunctionSpec(
        name="onSocietyTurn",
        trigger=PubSubTrigger(SOCIETY_TURN_TOPIC),
        handler="functions.triggers.society:on_society_turn",
        description=(
            "Agent society: one member's action for the day, from the day's start snapshot "
            "(one model call, corrective re-prompts for an invalid action)."
        ),
        retry=True,
        concurrency=8,
        cpu="1",
    ),
    FunctionSpec(
        name="onDebateWritten",
        trigger=FirestoreTrigger("written", paths.DEBATE),
        handler="functions.triggers.debate:on_debate_written",
        description=(
            "Hierarchical debate: a new debate document is categorized, packed into agents "
            "and its first layer created; a user's later write (resume, a fix) re-drives it."
        ),
    ),
    FunctionSpec(
        name="onDebateRoundCreated",
        trigger=FirestoreTrigger("created", paths.DEBATE_ROUND),
        handler="functions.triggers.debate:on_debate_round_created",
        description="Publish one debate-turn message per agent of the new round.",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onDebateTurn",
        trigger=PubSubTrigger(DEBATE_TURN_TOPIC),
        handler="functions.triggers.debate:on_debate_turn",
        description=(
            "One debate statement: the agent's prompt (its data, the cluster's memory), one "
            "model call, the statement created under its deterministic id."
        ),
        retry=True,
        concurrency=8,
        cpu="1",
    ),
    FunctionSpec(
        name="onConversationCreated",
        trigger=FirestoreTrigger("created", paths.CONVERSATION),
        handler="functions.triggers.conductor:on_conversation_created",
        description="Conductor workflows: start a conversation (its first step, the conductor).",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onConductorStep",
        trigger=PubSubTrigger(CONDUCTOR_STEP_TOPIC),
        handler="functions.triggers.conductor:on_conductor_step",
        description=(
            "One step of a conductor workflow (the conductor's routing or an agent's model turn "
            "with validation); its transaction creates the next step exactly once."
        ),
        retry=True,
    ),
    FunctionSpec(
        name="onHumanAnswerWritten",
        trigger=FirestoreTrigger("written", paths.HUMAN_ANSWER),
        handler="functions.triggers.conductor:on_human_answer_written",
        description="A person's answer to a human agent's step: wake the step that waits for it.",
        timeout_s=60,
    ),
    FunctionSpec(
        name="onConductorBranch",
        trigger=PubSubTrigger(CONDUCTOR_BRANCH_TOPIC),
        handler="functions.triggers.conductor:on_conductor_branch",
        description=(
            "One agent step of a parallel agent's branch; the last branch done publishes the "
            "join step, which completes once."
        ),
        retry=True,
    ),
    FunctionSpec(
        name="societyWatchdog",
        trigger=ScheduleTrigger(SOCIETY_TICK_TOPIC, schedule="every 1 minutes"),
        handler="functions.triggers.society:on_society_tick",
        description=(
            "Agent society: close days past their deadline (members that never acted idle), "
            "re-publish lost turns, take over a close whose invocation died, open ready days."
        ),
        timeout_s=300,
    ),
    FunctionSpec(
        name="onDebateStatementCreated",
        trigger=FirestoreTrigger("created", paths.DEBATE_STATEMENT),
        handler="functions.triggers.debate:on_debate_statement_created",
        description=(
            "Round completion (a transaction): the next round, the head agent's opening "
            "statement or the cluster's outputs; the last cluster of a layer re-clusters or "
            "decides."
        ),
        timeout_s=120,
        retry=True,
    ),
    FunctionSpec(
        name="debateWatchdog",
        trigger=ScheduleTrigger(DEBATE_WATCHDOG_TOPIC, schedule="every 1 minutes"),
        handler="functions.triggers.debate:on_debate_watchdog_tick",
        description=(
            "Re-drives unfinished debates: turns of rounds open too long (lost or killed), "
            "completion checks an invocation died before, a start whose event was lost."
        ),
        timeout_s=120,
    ),
    FunctionSpec(
        name="onChatConductor",
        trigger=PubSubTrigger(CHAT_CONDUCTOR_TOPIC),
        handler="functions.triggers.chat_conductor:on_chat_conductor",
        description=(
            "Conductor election policy: one conductor call picks the agent that answers a chat "
            "message (again, bounded, when the picked agent declines)."
        ),
        retry=True,
    ),
    FunctionSpec(
        name="conductorWatchdog",
        trigger=ScheduleTrigger(CONDUCTOR_TICK_TOPIC, schedule="every 1 minutes"),
        handler="functions.triggers.conductor:on_conductor_tick",
        description="Re-drives conductor steps whose invocation died (pending too long).",
        timeout_s=120,
    ),
    FunctionSpec(
        name="api",
        trigger=HttpTrigger("/v1", public=True),
        handler="functions.api.routes:handle",
        description=(
            "Deliberate Lab's REST API v1 (docs/API.md): experiments, cohorts, the export and "
            "the model logs, for callers with an API key (the key is the auth)."
        ),
        timeout_s=540,
        memory="2GiB",
    ),
)


def get(name: str) -> FunctionSpec:
    for spec in REGISTRY:
        if spec.name == name:
            return spec
    raise KeyError(f"no function named {name!r} in the registry")


def topics() -> list[str]:
    return sorted({s.trigger.topic for s in REGISTRY if isinstance(s.trigger, PubSubTrigger)})


def markdown_table() -> str:
    """The README's function table."""
    rows = ["| function | trigger | timeout | retry | what it does |", "|---|---|---|---|---|"]
    for spec in REGISTRY:
        trigger = _describe(spec.trigger)
        retry = "yes" if spec.retry else "no"
        rows.append(
            f"| `{spec.name}` | {trigger} | {spec.timeout_s} s | {retry} | {spec.description} |"
        )
    return "\n".join(rows)


def _describe(trigger: Trigger) -> str:
    if isinstance(trigger, FirestoreTrigger):
        return f"{trigger.event} `{trigger.document}`"
    if isinstance(trigger, HttpTrigger):
        return f"HTTP `{trigger.path}`" + (", unauthenticated" if trigger.public else "")
    return f"Pub/Sub `{trigger.topic}`"


if __name__ == "__main__":
    print(markdown_table())
