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
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud.firestore import Increment

from functions import errors, leases, store, work
from functions.agents.model_call import AnswerFailed, CallSite, CallStats, ask
from functions.society import docs
from functions.society.wire import SocietyTurn
from shared.llm.base import ModelError
from shared.models import DocumentError, now, parse_document
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
    where = docs.action_path(turn.society_id, turn.day, turn.action_id)
    unit = work.Unit(
        lease(turn), where, lambda: act(turn), ended=lambda failure: ended(turn, failure)
    )
    return work.run(unit)


def lease(turn: SocietyTurn) -> str:
    return sp.sub(turn.society_id, sp.TURN_LEASE, leaseId=f"{turn.day}-{turn.action_id}")


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
    day = docs.open_day(turn.society_id, turn.day)
    if day is not None and turn.agent_id in day.acting:
        _write(turn, record, letting_go=False)


def act(turn: SocietyTurn) -> None:
    s, path = turn.society_id, docs.action_path(turn.society_id, turn.day, turn.action_id)
    day = docs.open_day(s, turn.day)
    if day is None or turn.agent_id not in day.acting:
        return  # a late turn (the day closed without it) or one for a member not acting
    settings = day.settings or SocietySettings()
    if turn.slot > settings.actions_per_day:
        return
    snapshot = docs.snapshot_path(s, turn.day, turn.agent_id)
    snaps = {
        s.reference.path: s for s in store.db().get_all([store.ref(path), store.ref(snapshot)])
    }
    acted, data = snaps[path], snaps[snapshot]
    if acted.exists:
        return  # acted already (a duplicate, or the holder ran for it)
    member = parse_document(Member, snapshot, data.to_dict() if data.exists else None)
    if member.human:
        return
    stats = CallStats()
    try:
        record = _decide(turn, settings, member, stats)
    except Exception:
        docs.add_spend(s, turn.day, turn.agent_id, _spend(stats))  # what the attempt cost
        raise
    _write(turn, record, letting_go=True)


def _spend(stats: CallStats) -> Spend:
    return Spend(stats.calls, stats.prompt_tokens, stats.completion_tokens)


def _write(turn: SocietyTurn, record: ActionRecord, *, letting_go: bool) -> None:
    """The action and its tally increment, once, together; ``letting_go``: with the lease's
    release in the same batch (a turn that ran to its end)."""
    s = turn.society_id
    path = docs.action_path(s, turn.day, turn.action_id)

    spend = Spend(record.model_calls, record.prompt_tokens, record.completion_tokens)
    tally = {"count": Increment(1), **docs.spend_fields(spend)}

    def batch() -> Any:
        written = store.db().batch()
        written.create(store.ref(path), docs.model_doc(record))
        written.set(docs.tally_ref(s, turn.day, turn.agent_id), tally, merge=True)
        return written

    try:
        if letting_go:
            leases.commit_letting_go(lease(turn), batch)
        else:
            batch().commit()
    except gexc.AlreadyExists:  # a run beside this one wrote it: its calls still count
        docs.add_spend(s, turn.day, turn.agent_id, spend)


def _decide(
    turn: SocietyTurn, settings: SocietySettings, member: Member, stats: CallStats
) -> ActionRecord:
    """The member's action; ``stats`` counts every model attempt as it is made (also when
    this raises: a provider still failing)."""
    s = turn.society_id
    base = ActionRecord(
        agent_id=turn.agent_id, slot=turn.slot, day=turn.day, source="model", created_at=now()
    )
    reading = ReplyReading()
    try:
        prompt = _prompt(turn, settings, member)
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
        errors.record_error(errors.current_function(), error)
        chosen = base.model_copy(
            update={
                "action": {"action": "idle"},
                "source": "fallback",
                "invalid_reason": str(error),
            }
        )
    except ModelError as error:
        if error.retryable:
            raise  # the provider is failing: the function is retried
        where = DocumentError(
            docs.snapshot_path(s, turn.day, turn.agent_id), "modelSettings", str(error)
        )
        errors.record_error(errors.current_function(), where)
        chosen = base.model_copy(
            update={
                "action": {"action": "idle"},
                "source": "fallback",
                "invalid_reason": str(error),
            }
        )
    return chosen.model_copy(
        update={
            "model_calls": stats.calls,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
        }
    )


def _prompt(turn: SocietyTurn, settings: SocietySettings, member: Member) -> Rendered:
    s = turn.society_id
    prompts = docs.day_prompts(s, turn.day)
    context = docs.day_context(s, turn.day)
    where = sp.sub(s, sp.PROMPTS, promptId="default")
    try:
        return render(prompts, variables(member, context, settings, turn.slot), where)
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
