"""A day's close, top to bottom, exactly once, shard by shard, so that no invocation handles more
than ``DLAB_SOCIETY_CLOSE_SHARD_SIZE`` members. This module decides; what each step reads and
writes is ``functions.society.scene``'s; what each step computes is a pure rule:
``shared.society.rules`` (a shard's phase) and ``shared.society.close_rules`` (the society-level
steps between phases, and the finish).

1. **May it close.** Each action's trigger counts it and asks; the watchdog asks at the
   deadline.
2. **The claim.** A conditional write on the day document moves it from ``open`` to
   ``closing`` and fixes the interventions it applies and its shards (contiguous ranges of
   member ids); one message per shard.
3. **A shard's phase** (``act``, ``need`` only with an allocation law, ``settle``): a unit of
   work with its own lease and attempts; its outputs written, then its result (its done mark).
4. **The join.** The shard that finds every result of a phase in (a count) runs the
   society-level step (a few numbers per shard), writes its plan and moves the day to the next
   phase with a conditional write: of shards finishing at once, one wins.
5. **The finish** (a unit under the day's own lease): the next day's context, the proposals and
   the summary; the day closed and the next one ready in one conditional batch; then the next
   day opens (``then``, given by the caller: ``functions.society.days``).

Whatever dies, the watchdog's run of the close (``run``) pushes it on: each shard of the current
phase with no result and no live lease is published again, a phase whose results are all in is
joined, a finish is run again. Every write is a deterministic set of fixed inputs, so a re-run
writes the same documents. A unit that keeps failing ends after its attempts: the society is
marked ``failed`` (one error record under ``societies/{s}/errors``), and nothing re-drives it
until the researcher sets it running again (``rearm``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from functions import errors, work
from functions.society import scene
from functions.society.settings import society_settings
from functions.society.wire import CloseShard, publish_shards
from shared.models import DocumentError, now
from shared.society import close_rules, identity, rules
from shared.society import paths as sp
from shared.society.models import Day, SocietySettings

log = logging.getLogger(__name__)

SHARD_PHASES = ("act", "need", "settle")
Then = Callable[[close_rules.Final], object]
"""Opening the next day, with the outcome of the finish that closed this one."""


# --- 1. may the day close ---------------------------------------------------------------------


def action_created(s: str, day: int, path: str, data: dict[str, Any]) -> None:
    """A new document under the day's actions. An action is counted (a human's here; a turn
    counts its own in the batch that writes it) and the day checked; any other document gets
    its error record and nothing else: it must not make the day look complete. A document under
    a day no longer open: the close reads only the acting members' slots, so one that is no
    action gets its record here (a late action is left as it is)."""
    current = scene.open_day(s, day)
    expected = current or scene.read_day(s, day)
    if expected is None or expected.status == "ready":
        return
    try:
        action = identity.read(path, data, identity.Expected.of(expected))
    except DocumentError as error:
        errors.record_error(errors.current_function(), error)
        return
    if current is None:
        return
    if data.get("source") not in ("model", "fallback"):
        scene.count_action(s, day, action.agent_id)
    check(s, day, hinted=True)


def check(s: str, day: int, *, hinted: bool = False) -> None:
    """Start the close if every expected action is in (or the deadline passed). Many deliveries
    may call this at once: the claim lets one close. ``hinted``: count only once the sharded
    tally says the day may be complete (the watchdog counts anyway)."""
    current = scene.open_day(s, day)
    if current is None:
        return
    late = current.deadline is not None and now() >= current.deadline
    if hinted and not late and scene.count_hint(s, day) < current.expected:
        return
    if late or scene.may_close(s, current):
        start(s, day)


# --- 2. the claim -----------------------------------------------------------------------------


def start(s: str, day: int) -> None:
    """Claim an open day's close and publish its shards. A close already started is left to its
    shards (and the watchdog). A close starts once every expected action is in (no more can
    come) or at the deadline (a later one is late)."""
    seen = scene.claim_scene(s, day)
    if seen is None:
        return
    size = society_settings().society_close_shard_size
    count = len(close_rules.ranges(seen.agents, size))

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "open":
            return None
        return {
            "status": "closing",
            "closingAt": now(),
            "phase": "act",
            "phaseAt": now(),
            "shardSize": size,
            "shards": count,
            "interventionIds": seen.pending,
        }

    claimed = scene.change_day(s, day, decide)
    if claimed is not None:
        publish(s, claimed, "act", list(range(claimed.shards)))


def publish(s: str, day: Day, phase: str, which: list[int]) -> None:
    publish_shards([CloseShard(society_id=s, day=day.day, phase=phase, shard=k) for k in which])


# --- 3. a shard's phase -----------------------------------------------------------------------


def run_shard(message: CloseShard, then: Then) -> work.State | None:
    """One shard's phase, as a unit of work; then, if it was the phase's last, the join. None
    when the message is stale (the day moved on)."""
    s, k, phase = message.society_id, message.shard, message.phase
    day = scene.read_day(s, message.day)
    if day is None or day.status != "closing" or day.phase != phase or k >= day.shards:
        return None

    def work_it() -> None:
        shard_phase(s, day, phase, k)
        join(s, day.day, phase, then)

    unit = work.Unit(
        sp.shard_lease(s, day.day, phase, k),
        sp.day_path(s, day.day),
        work_it,
        ended=lambda failure: fail_society(s, day.day, failure),
    )
    return work.run(unit).state


def shard_phase(s: str, day: Day, phase: str, shard: int) -> None:
    """Run ``phase`` for ``shard`` unless its result is written already: its outputs, then its
    result."""
    seen = scene.shard_scene(s, day, phase, shard)
    if seen is None:
        return
    given, plan = seen.given, seen.plan
    if plan is None:  # act
        acted = rules.act(given)
        outbox = close_rules.route(acted.outbox, day.shard_size)
        scene.write_phase(s, day.day, phase, close_rules.act_digest(shard, acted), outbox=outbox)
    elif phase == "need":
        lack = rules.need(given, plan.ids[shard], seen.inbox)
        scene.write_phase(s, day.day, phase, close_rules.NeedDigest(shard=shard, lack=lack))
    else:
        budget = close_rules.budget(plan, shard)
        settled = rules.settle(given, plan.ids[shard], seen.inbox, budget, plan.outcomes)
        digest = close_rules.digest_settled(shard, given.settings, settled)
        scene.write_phase(s, day.day, phase, digest, settled=settled)


# --- 4. the join ------------------------------------------------------------------------------


def join(s: str, day: int, phase: str, then: Then) -> None:
    """If every shard's result of ``phase`` is in: the society-level step, and the next phase
    (one caller moves the day; the others find it moved)."""
    seen = scene.join_scene(s, day, phase)
    if seen is None:
        return
    after = _plan(s, seen)

    def decide(now_: Day | None) -> dict[str, Any] | None:
        if now_ is None or now_.status != "closing" or now_.phase != phase:
            return None
        return {"phase": after, "phaseAt": now()}

    moved = scene.change_day(s, day, decide)
    if moved is None:
        return
    log.info("society %s: day %d close: %s done, %s next", s, day, phase, after)
    if after == "finish":
        finish(s, day, then)
    else:
        publish(s, moved, after, list(range(moved.shards)))


def _plan(s: str, seen: scene.JoinScene) -> str:
    """The society-level step after the phase: its plan written (the same by whoever writes
    it: a function of the shards' results), and the phase that follows."""
    day, results = seen.day, seen.results
    if isinstance(results, scene.NeedResults):
        plan = close_rules.with_budgets(results.plan, results.lacks)
        scene.write_plan(s, day.day, "need", plan)
        return "settle"
    if isinstance(results, scene.ActResults):
        settings = day.settings or SocietySettings()
        context = results.context
        plan = close_rules.plan(
            day.day, settings, context, results.interventions, results.acted, context.agents
        )
        scene.write_plan(s, day.day, "act", plan)
        return "need" if plan.net else "settle"
    return "finish"


# --- 5. the finish ----------------------------------------------------------------------------


def finish(s: str, day: int, then: Then) -> work.State:
    unit = work.Unit(
        sp.close_lease(s, day),
        sp.day_path(s, day),
        lambda: _finish(s, day, then),
        ended=lambda failure: fail_society(s, day, failure),
    )
    return work.run(unit).state


def _finish(s: str, day: int, then: Then) -> None:
    seen = scene.finish_scene(s, day)
    if seen is None:
        return
    final = close_rules.finish(
        day,
        seen.day.settings or SocietySettings(),
        seen.context,
        seen.interventions,
        seen.plan,
        seen.settled,
        seen.spend,
    )
    scene.write_final(s, day, final, seen.plan.applied)
    if _closed(s, day, final):
        then(final)


def _closed(s: str, day: int, final: close_rules.Final) -> bool:
    """Mark the day closed and the next one ready, once (a take-over may finish first)."""
    closed_at = now()

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "closing":
            return None
        return {"status": "closed", "closedAt": closed_at}

    finished = scene.change_day(s, day, decide, scene.with_next_day(s, day, closed_at)) is not None
    if finished:
        log.info("society %s: day %d closed (%d active)", s, day, final.summary.active)
    return finished


# --- when a unit ends, dies or is fixed -------------------------------------------------------


def fail_society(s: str, day: int, failure: work.Failure) -> None:
    """A unit of the close spent its attempts: the society stops, FAILED, with the cause on
    its own document (the console and ``tools.society --follow`` show it)."""
    scene.fail(
        s,
        {
            "document": failure.document,
            "field": failure.field,
            "reason": failure.reason[:2000],
            "attempts": failure.attempts,
            "day": day,
            "at": now(),
        },
    )
    log.error("society %s failed closing day %d: %s", s, day, failure.reason)


def run(s: str, day: int, then: Then) -> None:
    """The watchdog's (and a resume's) run: start the close of an open day, or push an
    unfinished one on."""
    current = scene.read_day(s, day)
    if current is None:
        return
    if current.status == "open":
        start(s, day)
    elif current.status == "closing" and current.phase == "finish":
        finish(s, day, then)
    elif current.status == "closing" and current.phase in SHARD_PHASES:
        _redrive(s, current, then)


def _redrive(s: str, day: Day, then: Then) -> None:
    """The shards of the current phase with no result and nobody at them, published again from
    ``redriveS`` after the phase started; a phase whose results are all in (its joiner died),
    joined."""
    missing = scene.missing_results(s, day)
    if not missing:
        join(s, day.day, day.phase, then)
        return
    redrive_s = day.settings.redrive_s if day.settings else 30.0
    if day.phase_at is not None and (now() - day.phase_at).total_seconds() < redrive_s:
        return
    stranded = scene.unheld({k: sp.shard_lease(s, day.day, day.phase, k) for k in missing})
    if stranded:
        publish(s, day, day.phase, stranded)


def rearm(s: str, day: int) -> bool:
    """The researcher set a failed society running again: the units of the close's current
    step get a fresh budget."""
    current = scene.read_day(s, day)
    if current is None or current.status != "closing":
        return False
    if current.phase not in SHARD_PHASES:
        return work.rearm(sp.close_lease(s, day))
    rearmed = [work.rearm(sp.shard_lease(s, day, current.phase, k)) for k in range(current.shards)]
    return any(rearmed)  # every shard's, not only up to the first
