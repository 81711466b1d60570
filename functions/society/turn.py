"""One member's turn on one day: build its prompt from the day's start snapshot, ask its model,
and write the action document (created once: a duplicate or late turn changes nothing).

Duplicate and concurrent deliveries of one turn coalesce on a lease (``functions.leases``), so
the model is asked once. A garbled or out-of-bounds reply gets corrective re-prompts with the
exact reason; when they run out, the action is recorded as invalid (the agent idles that day).
A provider still failing raises: the retrying function runs the turn again, until the day
closes without it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud.firestore import Increment

from functions import errors, leases, store, work
from functions.agents.model_call import AnswerFailed, CallSite, CallStats, ask_counted
from functions.society import docs
from functions.society.wire import SocietyTurn
from shared.llm.base import ModelError
from shared.models import DocumentError, now, parse_document
from shared.models.participant import ParticipantProfile, ProfileAgentConfig
from shared.prompts.templating import PromptTemplateError
from shared.society import paths as sp
from shared.society.actions import action_dict, parse_action, reply_schema
from shared.society.models import ActionRecord, Day, Member, SocietySettings
from shared.society.prompts import render, variables

log = logging.getLogger(__name__)


def run(turn: SocietyTurn) -> None:
    where = docs.action_path(turn.society_id, turn.day, turn.action_id)
    work.run(work.Unit(_lease(turn), where, lambda: act(turn)))


def _lease(turn: SocietyTurn) -> str:
    return sp.sub(turn.society_id, sp.TURN_LEASE, leaseId=f"{turn.day}-{turn.action_id}")


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
    record = _decide(turn, day, settings, member)

    def batch() -> Any:  # the action and its tally increment, once, together
        written = store.db().batch()
        written.create(store.ref(path), docs.model_doc(record))
        written.set(docs.tally_ref(s, turn.day, turn.agent_id), {"count": Increment(1)}, merge=True)
        return written

    with contextlib.suppress(gexc.AlreadyExists):
        leases.commit_letting_go(_lease(turn), batch)


def _decide(turn: SocietyTurn, day: Day, settings: SocietySettings, member: Member) -> ActionRecord:
    s = turn.society_id
    base = ActionRecord(
        agent_id=turn.agent_id, slot=turn.slot, day=turn.day, source="model", created_at=now()
    )
    stats = CallStats()
    try:
        prompt = _prompt(turn, settings, member)
        action, _ = ask_counted(
            _site(turn, settings, member),
            prompt,
            reply_schema(settings.agents),
            lambda parsed: parse_action(parsed, settings.agents),
            retries=settings.max_retries,
            stats=stats,
        )
        chosen = base.model_copy(update={"action": action_dict(action)})
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


def _prompt(turn: SocietyTurn, settings: SocietySettings, member: Member) -> str:
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
