"""One member's turn on one day: build its prompt from the day's start snapshot, ask its model,
and write the action document (created once: a duplicate or late turn changes nothing).

The turn is a unit of work (``functions.work``): duplicate and concurrent deliveries coalesce on
its short, renewed lease, so the model is asked once; each attempt is counted before the model
is asked. A reply is an answer (seed 003's rule, ``ReplyReading``): text with no JSON in it is
the member's forum post; broken or invalid JSON, or an empty reply, gets corrective re-prompts
with the exact reason, then the member idles with that reason. A provider still failing raises
(the watchdog re-drives the turn); once the attempts are spent the member idles with the reason
(``ended``), so the day never waits for its deadline on a broken member.
"""

from __future__ import annotations

import logging

from functions import errors, work
from functions.agents.model_call import AnswerFailed, CallSite, CallStats, ask
from functions.society import scene
from functions.society.wire import SocietyTurn
from shared.llm.base import ModelError
from shared.models import DocumentError, now
from shared.models.participant import ParticipantProfile, ProfileAgentConfig
from shared.prompts.templating import PromptTemplateError
from shared.society import paths as sp
from shared.society.actions import action_dict, parse_action, reply_schema
from shared.society.models import ActionRecord, Member, SocietySettings
from shared.society.prompts import Rendered, render, variables
from shared.society.replies import ReplyReading
from shared.society.rules import Spend

log = logging.getLogger(__name__)


def run(turn: SocietyTurn) -> work.Outcome[None]:
    where = sp.action_path(turn.society_id, turn.day, turn.action_id)
    unit = work.Unit(
        lease(turn), where, lambda: act(turn), ended=lambda failure: ended(turn, failure)
    )
    return work.run(unit)


def lease(turn: SocietyTurn) -> str:
    return sp.turn_lease(turn.society_id, turn.day, turn.action_id)


def ended(turn: SocietyTurn, failure: work.Failure) -> None:
    """The turn's attempts are spent (or it failed for good): the member idles today, with the
    reason in its action (an ``invalid_action`` event when the day closes), so the day closes
    once everyone else acted instead of at its deadline."""
    record = ActionRecord(
        agent_id=turn.agent_id,
        slot=turn.slot,
        day=turn.day,
        action={"action": "idle"},
        source="fallback",
        invalid_reason=failure.reason,
        created_at=now(),
    )
    day = scene.open_day(turn.society_id, turn.day)
    if day is not None and turn.agent_id in day.acting:
        scene.write_action(turn.society_id, record, lease=None)


def act(turn: SocietyTurn) -> None:
    seen = scene.turn_scene(turn.society_id, turn.day, turn.agent_id, turn.slot)
    if seen is None:
        return  # a late or duplicate turn, or none to take (a human's, a slot beyond the day's)
    stats = CallStats()
    try:
        record = _decide(turn, seen, stats)
    except Exception:
        spend = Spend(stats.calls, stats.prompt_tokens, stats.completion_tokens)
        scene.add_spend(turn.society_id, turn.day, turn.agent_id, spend)  # what it cost
        raise
    scene.write_action(turn.society_id, record, lease=lease(turn))


def _decide(turn: SocietyTurn, seen: scene.TurnScene, stats: CallStats) -> ActionRecord:
    """The member's action; ``stats`` counts every model attempt as it is made (also when
    this raises: a provider still failing)."""
    settings, member = seen.day.settings or SocietySettings(), seen.member
    base = ActionRecord(
        agent_id=turn.agent_id, slot=turn.slot, day=turn.day, source="model", created_at=now()
    )
    reading = ReplyReading()
    try:
        prompt = _prompt(turn, seen, settings)
        action = ask(
            _site(turn, settings, member),
            prompt.user,
            reply_schema(settings.agents),
            lambda parsed: parse_action(parsed, settings.agents),
            retries=settings.max_retries,
            generation_config={
                "maxTokens": settings.max_tokens,
                "temperature": settings.temperature,
            },
            parse=reading.parse,
            stats=stats,
            system=prompt.system,
        )
        chosen = base.model_copy(update={"action": action_dict(action), "from_text": reading.prose})
    except AnswerFailed as failed:
        chosen = base.model_copy(
            update={"action": {"action": "idle"}, "invalid_reason": failed.last_error}
        )
    except DocumentError as error:  # a broken prompt template: recorded, the agent idles
        chosen = _fallback(base, error, str(error))
    except ModelError as error:
        if error.retryable:
            raise  # the provider is failing: the function is retried
        where = sp.snapshot_path(turn.society_id, turn.day, turn.agent_id)
        chosen = _fallback(base, DocumentError(where, "modelSettings", str(error)), str(error))
    return chosen.model_copy(
        update={
            "model_calls": stats.calls,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
        }
    )


def _fallback(base: ActionRecord, error: DocumentError, reason: str) -> ActionRecord:
    """The member idles: its configuration is broken (recorded, naming the document and the
    field), not its reply."""
    errors.record_error(errors.current_function(), error)
    return base.model_copy(
        update={"action": {"action": "idle"}, "source": "fallback", "invalid_reason": reason}
    )


def _prompt(turn: SocietyTurn, seen: scene.TurnScene, settings: SocietySettings) -> Rendered:
    if isinstance(seen.prompting, DocumentError):
        raise seen.prompting
    where = sp.sub(turn.society_id, sp.PROMPTS, promptId="default")
    try:
        values = variables(seen.member, seen.prompting.context, settings, turn.slot)
        return render(seen.prompting.prompts, values, where)
    except PromptTemplateError as error:
        field = error.template_name.removeprefix(where).strip() or "(document)"
        raise DocumentError(where, field, error.message) from None


def _site(turn: SocietyTurn, settings: SocietySettings, member: Member) -> CallSite:
    """Who asks: a profile for the model call's log; its ids do not name the society, so the
    scripted model plays the same seed the same way in any society."""
    agent = f"s{settings.seed}-agent{turn.agent_id}"
    profile = ParticipantProfile(
        private_id=agent,
        public_id=member.display_name,
        current_cohort_id=turn.society_id,
        agent_config=ProfileAgentConfig(agent_id=agent, model_settings=member.model_settings),
    )
    return CallSite(
        experiment_id=turn.society_id,
        participant=profile,
        stage_id=f"day-{turn.day}",
        description=f"society action {turn.slot}",
        log_collection=sp.collection(turn.society_id, sp.MODEL_LOG, logId="x"),
    )
