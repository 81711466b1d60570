"""What each step of a society's day reads (its scene, in one call) and writes (its outcome).

The steps (``setup``, ``days``, ``turn``, ``close``, ``watchdog``) decide; the rules
(``shared.society``) compute; this module is the society's one door to Firestore, in the order
of a day: setup, opening, a turn, the close (may it close, the claim, a shard's phase, the join,
the finish), the watchdog. It speaks to the client itself, justified: a scene is one batched
read (``get_all``), a completeness check is a count query, the day moves by conditional writes,
and the close's outputs go in parallel batches; none of these are single-document reads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore import Increment
from pydantic import BaseModel

from functions import documents, errors, leases, store, transactions
from shared.models import DocModel, DocumentError, parse_document
from shared.society import close_rules, identity, rules
from shared.society import paths as sp
from shared.society.models import (
    ActionRecord,
    Day,
    DayContext,
    DaySummary,
    Intervention,
    Member,
    Society,
    SocietySettings,
)
from shared.society.prompts import SocietyPrompts
from shared.society.rules import Delivery, Spend

M = TypeVar("M", bound=BaseModel)
D = TypeVar("D", bound=BaseModel)
BATCH = 200
"""Writes per batch (Firestore allows 500)."""
WRITERS = 4

Writes = Iterable[tuple[str, DocModel]]
"""(path, document) pairs, each set whole: writing the same outcome twice leaves the same
documents."""


# --- what every step shares: the day document, batched writes, the per-instance cache --------


def read_day(s: str, day: int) -> Day | None:
    path = sp.day_path(s, day)
    data = store.snapshot_data(path)
    return None if data is None else parse_document(Day, path, data)


def latest_day(s: str) -> Day | None:
    ref = store.db().collection(sp.collection(s, sp.DAY, day="x"))
    query = ref.order_by("day", direction=firestore.Query.DESCENDING).limit(1)
    for snap in query.stream():
        return parse_document(Day, snap.reference.path, snap.to_dict() or {})
    return None


Decide = Callable[[Day | None], dict[str, Any] | None]


def change_day(
    s: str, day: int, decide: Decide, also: Callable[[firestore.WriteBatch], None] | None = None
) -> Day | None:
    """Update the day document as ``decide`` says, on the condition that nobody changed it since
    it was read (an optimistic write: no transaction holds it, so a hundred deliveries asking at
    once do not queue on a lock). ``also`` adds writes to the same atomic batch. The updated day,
    or None when ``decide`` declines or another delivery changed the day first."""
    path = sp.day_path(s, day)
    ref = store.ref(path)
    for _ in range(5):
        snap = ref.get()
        current = parse_document(Day, path, snap.to_dict()) if snap.exists else None
        update = decide(current)
        if update is None or current is None:
            return None
        batch = store.db().batch()
        batch.update(ref, update, option=store.db().write_option(last_update_time=snap.update_time))
        if also is not None:
            also(batch)
        try:
            batch.commit()
        except gexc.FailedPrecondition:
            continue  # changed under us: decide again on what it is now
        return parse_document(Day, path, {**current.to_firestore(), **update})
    return None


def write_all(writes: Writes) -> int:
    """Set every (path, document) in batches committed in parallel; the number written."""
    items = [(path, doc.to_firestore()) for path, doc in writes]
    chunks = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]

    def commit(chunk: list[tuple[str, dict[str, Any]]]) -> None:
        def write() -> None:
            batch = store.db().batch()
            for path, data in chunk:
                batch.set(store.ref(path), data)
            batch.commit()

        transactions.retry_contended(write)  # "409 Transaction lock timeout" under load

    with concurrent.futures.ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(commit, chunks))
    return len(items)


_cache: dict[tuple[str, ...], Any] = {}
_cache_lock = threading.Lock()
CACHE_SIZE = 512


def _cached(key: tuple[str, ...], read: Callable[[], M]) -> M:
    """A document that does not change for the rest of a day (its context, the day once open,
    its prompts), read once per instance and day."""
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    value = read()
    with _cache_lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[key] = value
    return value


def open_day(s: str, day: int) -> Day | None:
    """The day as it opened (acting members, settings, deadline: fixed once open), cached; None
    if it is not open (not yet, or closed already: then nothing is cached)."""
    key = ("day", s, str(day))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    current = read_day(s, day)
    if current is None or current.status != "open":
        return None
    return _cached(key, lambda: current)


def day_context(s: str, day: int) -> DayContext:
    path = sp.state_path(s, day, "context")
    return _cached(("context", s, str(day)), lambda: store.read(DayContext, path))


def _interventions(s: str, ids: list[str]) -> list[tuple[str, Intervention]]:
    """The interventions a close fixed when it started (a malformed one recorded, left out)."""
    refs = [store.ref(sp.sub(s, sp.INTERVENTION, interventionId=i)) for i in ids]
    snaps = list(store.db().get_all(refs)) if refs else []
    return documents.valid(
        [snap for snap in snaps if snap.exists],
        lambda path, data: (path.rsplit("/", 1)[1], parse_document(Intervention, path, data)),
    )


def _mark_applied(s: str, day: int, applied: dict[str, float]) -> None:
    for iid, amount in sorted(applied.items()):
        store.ref(sp.sub(s, sp.INTERVENTION, interventionId=iid)).update(
            Intervention.fields(applied_day=day, applied_amount=amount)
        )


# --- setup ------------------------------------------------------------------------------------


def started(s: str) -> bool:
    """The society's first day exists (set up already, or being set up)."""
    return store.snapshot_data(sp.day_path(s, 1)) is not None


def set_up(s: str, writes: Writes, prompts: SocietyPrompts, first: Day) -> bool:
    """A new society's documents, its first day last; True if this call created that day. The
    researcher's own prompts stay."""
    write_all(writes)
    with contextlib.suppress(gexc.AlreadyExists):
        store.ref(sp.sub(s, sp.PROMPTS, promptId="default")).create(prompts.to_firestore())
    try:
        store.ref(sp.day_path(s, first.day)).create(first.to_firestore())
    except gexc.AlreadyExists:
        return False
    return True


# --- opening a day ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Opening:
    society: Society
    snapshots: dict[int, Member]
    """Every member's state at the start of the day (empty when the caller knows who acts)."""


def opening(s: str, day: int, *, members: bool) -> Opening:
    """The society, and (``members``) every member's state at the start of ``day`` (a malformed
    one is recorded, left out)."""
    society = store.read(Society, sp.society(s))
    if not members:
        return Opening(society, {})
    ref = store.db().collection(sp.collection(s, sp.DAY_MEMBER, day=sp.day_id(day)))
    found = documents.valid(ref.stream(), lambda path, data: parse_document(Member, path, data))
    return Opening(society, {m.agent_id: m for m in found})


# --- a member's turn --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Prompting:
    prompts: SocietyPrompts
    """As the day's first turn in this instance read them: an edit applies from the next day on
    (or to a day's turns on instances that had not read them yet)."""
    context: DayContext


@dataclasses.dataclass(frozen=True)
class TurnScene:
    day: Day
    member: Member
    prompting: Prompting | DocumentError
    """What the prompt is built from, or why it cannot be read (a malformed prompts or context
    document: the member idles, recorded, as with a broken template)."""


def turn_scene(s: str, day: int, agent: int, slot: int) -> TurnScene | None:
    """What a turn decides on, or None when there is no turn to take: the day is not open (a
    late turn), the member is not acting or is a human, the slot is beyond the day's, or its
    action is written already (a duplicate, or the lease's holder ran for it)."""
    current = open_day(s, day)
    if current is None or agent not in current.acting:
        return None
    if slot > (current.settings or SocietySettings()).actions_per_day:
        return None
    action = sp.action_path(s, day, identity.action_id(agent, slot))
    snapshot = sp.snapshot_path(s, day, agent)
    both = store.db().get_all([store.ref(action), store.ref(snapshot)])
    snaps = {x.reference.path: x for x in both}
    if snaps[action].exists:
        return None
    data = snaps[snapshot]
    member = parse_document(Member, snapshot, data.to_dict() if data.exists else None)
    if member.human:
        return None
    prompting: Prompting | DocumentError
    try:
        prompting = Prompting(_day_prompts(s, day), day_context(s, day))
    except DocumentError as error:
        prompting = error
    return TurnScene(current, member, prompting)


def _day_prompts(s: str, day: int) -> SocietyPrompts:
    def read() -> SocietyPrompts:
        path = sp.sub(s, sp.PROMPTS, promptId="default")
        data = store.snapshot_data(path)
        return SocietyPrompts() if data is None else parse_document(SocietyPrompts, path, data)

    return _cached(("prompts", s, str(day)), read)


SPEND_FIELDS = {"model_calls": "calls", "prompt_tokens": "promptTokens"}
SPEND_FIELDS |= {"completion_tokens": "completionTokens"}
"""Spend fields of a tally shard: every model attempt of the day's turns, counted as it is
made (in the action's batch, or on its own when the attempt failed), so the day's summary
counts what the provider received, not only the calls of the actions written."""


def spend_fields(spend: Spend) -> dict[str, Any]:
    return {SPEND_FIELDS[k]: Increment(v) for k, v in dataclasses.asdict(spend).items() if v}


def _tally(s: str, day: int, agent: int) -> firestore.DocumentReference:
    return store.ref(sp.tally_path(s, day, agent % sp.TALLY_SHARDS))


def add_spend(s: str, day: int, agent: int, spend: Spend) -> None:
    """Count the model attempts of a turn attempt that wrote no action (it raised, or a run
    beside it wrote the action first)."""
    fields = spend_fields(spend)
    if fields:
        _tally(s, day, agent).set(fields, merge=True)


def count_action(s: str, day: int, agent: int) -> None:
    """A human's action, counted in the day's tally (a turn counts its own with its action)."""
    _tally(s, day, agent).set({"count": Increment(1)}, merge=True)


def write_action(s: str, record: ActionRecord, lease: str | None) -> None:
    """The action and its tally increment, once, together; ``lease``: let go in the same batch
    (a turn that ran to its end). A run beside this one that wrote it first: its calls still
    count."""
    day, agent = record.day, record.agent_id
    path = sp.action_path(s, day, identity.action_id(agent, record.slot))
    spend = Spend(record.model_calls, record.prompt_tokens, record.completion_tokens)
    tally = {"count": Increment(1), **spend_fields(spend)}

    def batch() -> Any:
        written = store.db().batch()
        written.create(store.ref(path), record.to_firestore())
        written.set(_tally(s, day, agent), tally, merge=True)
        return written

    try:
        if lease is not None:
            leases.commit_letting_go(lease, batch)
        else:
            batch().commit()
    except gexc.AlreadyExists:
        add_spend(s, day, agent, spend)


# --- the close: may the day close? ------------------------------------------------------------


def _tally_shards(s: str, day: int) -> list[dict[str, Any]]:
    refs = [store.ref(sp.tally_path(s, day, k)) for k in range(sp.TALLY_SHARDS)]
    return [snap.to_dict() or {} for snap in store.db().get_all(refs)]


def count_hint(s: str, day: int) -> int:
    """The sharded tally's sum: at most the actions created (an increment goes with its action's
    creation in one batch), or more (a human's action is counted by its trigger, which may run
    twice). Only a hint that the real count is worth making."""
    return sum(int(d.get("count", 0)) for d in _tally_shards(s, day))


def _actions(s: str, day: int) -> firestore.CollectionReference:
    return store.db().collection(sp.collection(s, sp.ACTION, day=sp.day_id(day)))


def may_close(s: str, day: Day) -> bool:
    """Every action the open ``day`` expects is in, or its close started already (then the
    claim decides). The day itself is read first: the deliveries that arrive after the claim
    (all of a large day's, when its action events queue behind its turns) stop at that one
    read. Then the count query (every document under the day's actions, strays included),
    cheap and enough while any action is missing; a stray document is no action, so then the
    documents are read and told apart (``shared.society.identity``)."""
    fresh = read_day(s, day.day)
    if fresh is None or fresh.status != "open":
        return True
    if int(_actions(s, day.day).count().get()[0][0].value) < day.expected:
        return False
    snaps = _actions(s, day.day).stream()
    found = ((snap.reference.path, store.data_of(snap) or {}) for snap in snaps)
    return len(identity.sort(found, identity.Expected.of(day)).actions) >= day.expected


# --- the close: the claim ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClaimScene:
    day: Day
    agents: int
    """Members the day's context counts (the shards cover 1..agents)."""
    pending: list[str]
    """The interventions not applied yet: the close applies these."""


def claim_scene(s: str, day: int) -> ClaimScene | None:
    """What the claim decides on; None unless the day is open. It reads no member: the shards
    do."""
    current = read_day(s, day)
    if current is None or current.status != "open":
        return None
    interventions = store.db().collection(sp.collection(s, sp.INTERVENTION, interventionId="x"))
    pending = sorted(
        snap.id
        for snap in interventions.stream()
        if (snap.to_dict() or {}).get("appliedDay") is None
    )
    return ClaimScene(current, day_context(s, day).agents, pending)


# --- the close: a shard's phase ---------------------------------------------------------------


class Fixed(DocModel):
    """``close/fix-{k}``: the actions shard k resolves."""

    action_ids: list[str] = []


class Inbox(DocModel):
    """``closeInbox/{to}-{from}``: deliveries from one shard's actions to another's members."""

    to: int
    sender: int
    deliveries: list[Delivery] = []


@dataclasses.dataclass(frozen=True)
class ShardScene:
    given: rules.ShardInput
    inbox: list[Delivery]
    """What other shards' actions did to its members (read from ``need`` on)."""
    plan: close_rules.Plan | None
    """The society-level step's plan (from ``need`` on; ``settle``: with the pool's budgets
    if the day had a ``need`` phase)."""


def shard_scene(s: str, day: Day, phase: str, shard: int) -> ShardScene | None:
    """What a shard's phase decides on; None when its result is written already. Its actions are
    those its first ``act`` run fixed (``fix-{k}``, created once: a late turn may write one
    after the close started), read and told apart again (one changed since is no action
    either)."""
    if store.snapshot_data(sp.close_part(s, day.day, sp.result_id(phase, shard))) is not None:
        return None
    context = day_context(s, day.day)
    first, last = close_rules.ranges(context.agents, day.shard_size)[shard]
    acting = [a for a in day.acting if first <= a <= last]
    given = rules.ShardInput(
        day=day.day,
        settings=day.settings or SocietySettings(),
        context=context,
        members=_members(s, day.day, first, last),
        acting=acting,
        actions=_fixed_actions(s, day, shard, acting),
        interventions=[
            (iid, item)
            for iid, item in _interventions(s, day.intervention_ids)
            if first <= item.agent_id <= last
        ],
    )
    if phase == "act":
        return ShardScene(given, [], None)
    plan = read_plan(s, day.day, "act") if phase == "need" else current_plan(s, day.day)
    return ShardScene(given, _inbox(s, day.day, shard), plan)


def _members(s: str, day: int, first: int, last: int) -> dict[int, Member]:
    refs = [store.ref(sp.snapshot_path(s, day, i)) for i in range(first, last + 1)]
    snaps = [snap for snap in store.db().get_all(refs) if snap.exists]
    members = documents.valid(snaps, lambda path, data: parse_document(Member, path, data))
    return {m.agent_id: m for m in members}


def _fixed_actions(s: str, day: Day, shard: int, acting: list[int]) -> list[ActionRecord]:
    path = sp.close_part(s, day.day, f"fix-{shard:05d}")
    data = store.snapshot_data(path)
    if data is not None:
        return _read_actions(s, day, parse_document(Fixed, path, data).action_ids)
    per_day = day.settings.actions_per_day if day.settings else 1
    ids = [identity.action_id(a, k) for a in acting for k in range(1, per_day + 1)]
    found = _read_actions(s, day, ids)
    fixed = Fixed(action_ids=sorted(identity.action_id(a.agent_id, a.slot) for a in found))
    try:
        store.ref(path).create(fixed.to_firestore())
    except gexc.AlreadyExists:  # a run beside this one fixed them first: its set holds
        return _fixed_actions(s, day, shard, acting)
    return found


def _read_actions(s: str, day: Day, ids: list[str]) -> list[ActionRecord]:
    """The documents among ``ids`` that are actions (another is recorded: its body disagrees
    with its id)."""
    refs = [store.ref(sp.action_path(s, day.day, a)) for a in ids]
    snaps = [snap for snap in (store.db().get_all(refs) if refs else []) if snap.exists]
    found = identity.sort(
        ((snap.reference.path, store.data_of(snap) or {}) for snap in snaps),
        identity.Expected.of(day),
    )
    for error in found.errors:
        errors.record_error(errors.current_function(), error)
    return list(found.actions.values())


def _inbox(s: str, day: int, shard: int) -> list[Delivery]:
    ref = store.db().collection(sp.collection(s, sp.CLOSE_INBOX, day=sp.day_id(day), pair="x"))
    found = ref.where(filter=firestore.FieldFilter("to", "==", shard)).stream()
    return [d for snap in found for d in Inbox.model_validate(snap.to_dict() or {}).deliveries]


def write_phase(
    s: str,
    day: int,
    phase: str,
    digest: DocModel,
    *,
    outbox: dict[int, list[Delivery]] | None = None,
    settled: rules.Settled | None = None,
) -> None:
    """A shard's phase's outputs, then its result (``digest``: its done mark, and what the join
    reads of it). ``outbox`` (``act``): what its actions did to other shards' members, one inbox
    per shard; ``settled`` (``settle``): its members' next state, its posts, messages and
    events, its interventions marked applied."""
    shard = int(digest.to_firestore()["shard"])
    writes: list[tuple[str, DocModel]] = []
    for to, found in sorted((outbox or {}).items()):
        pair = f"{to:05d}-{shard:05d}"
        inbox = Inbox(to=to, sender=shard, deliveries=found)
        writes.append((sp.sub(s, sp.CLOSE_INBOX, day=sp.day_id(day), pair=pair), inbox))
    if settled is not None:
        for i, m in settled.members.items():
            writes += [(sp.snapshot_path(s, day + 1, i), m), (sp.sub(s, sp.MEMBER, agentId=i), m)]
        writes += [(sp.sub(s, sp.POST, postId=p.id), p) for p in settled.posts]
        writes += [(sp.sub(s, sp.MESSAGE, messageId=m.id), m) for m in settled.messages]
        writes += [(sp.sub(s, sp.EVENT, eventId=e.id), e) for e in settled.events]
    if writes:
        write_all(writes)
    if settled is not None:
        _mark_applied(s, day, settled.applied)
    data = {**digest.to_firestore(), "phase": phase}
    store.ref(sp.close_part(s, day, sp.result_id(phase, shard))).set(data)


# --- the close: the join ----------------------------------------------------------------------


def _phase_query(s: str, day: int, phase: str) -> Any:
    ref = store.db().collection(sp.collection(s, sp.CLOSE_PART, day=sp.day_id(day), part="x"))
    return ref.where(filter=firestore.FieldFilter("phase", "==", phase))


def _results(s: str, day: int, phase: str, model: type[D]) -> list[D]:
    return [
        model.model_validate(snap.to_dict() or {}) for snap in _phase_query(s, day, phase).stream()
    ]


@dataclasses.dataclass(frozen=True)
class ActResults:
    """The shards' results of ``act``, with the society's state the plan starts from."""

    context: DayContext
    interventions: list[tuple[str, Intervention]]
    acted: list[close_rules.ActDigest]


@dataclasses.dataclass(frozen=True)
class NeedResults:
    """The plan after ``act``, and what each shard's members lack."""

    plan: close_rules.Plan
    lacks: list[close_rules.NeedDigest]


@dataclasses.dataclass(frozen=True)
class JoinScene:
    """What the society-level step after a phase decides on (``settle``: nothing more)."""

    day: Day
    results: ActResults | NeedResults | None


def join_scene(s: str, day: int, phase: str) -> JoinScene | None:
    """None unless the day's close is at ``phase`` and every shard's result of it is in (a
    count query: the results are read only then)."""
    current = read_day(s, day)
    if current is None or current.status != "closing" or current.phase != phase:
        return None
    if int(_phase_query(s, day, phase).count().get()[0][0].value) < current.shards:
        return None
    if phase == "act":
        interventions = _interventions(s, current.intervention_ids)
        acted = _results(s, day, "act", close_rules.ActDigest)
        return JoinScene(current, ActResults(day_context(s, day), interventions, acted))
    if phase == "need":
        lacks = _results(s, day, "need", close_rules.NeedDigest)
        return JoinScene(current, NeedResults(read_plan(s, day, "act"), lacks))
    return JoinScene(current, None)


def read_plan(s: str, day: int, after: str) -> close_rules.Plan:
    return store.read(close_rules.Plan, sp.close_part(s, day, f"plan-{after}"))


def current_plan(s: str, day: int) -> close_rules.Plan:
    """The plan the ``settle`` phase and the finish use: with the pool's budgets if the day
    had a ``need`` phase."""
    plan = read_plan(s, day, "act")
    return read_plan(s, day, "need") if plan.net else plan


def write_plan(s: str, day: int, after: str, plan: close_rules.Plan) -> None:
    store.ref(sp.close_part(s, day, f"plan-{after}")).set(plan.to_firestore())


def missing_results(s: str, day: Day) -> list[int]:
    """The shards of the day's phase with no result."""
    refs = [
        store.ref(sp.close_part(s, day.day, sp.result_id(day.phase, k))) for k in range(day.shards)
    ]
    return [k for k, snap in enumerate(store.db().get_all(refs)) if not snap.exists]


def unheld(leased: dict[int, str]) -> list[int]:
    """The keys whose lease (its path) nobody holds now."""
    held = store.db().get_all([store.ref(path) for path in leased.values()])
    live = {snap.reference.path for snap in held if leases.live(snap)}
    return sorted(k for k, path in leased.items() if path not in live)


# --- the close: the finish --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FinishScene:
    day: Day
    context: DayContext
    interventions: list[tuple[str, Intervention]]
    plan: close_rules.Plan
    settled: list[close_rules.SettleDigest]
    spend: Spend


def finish_scene(s: str, day: int) -> FinishScene | None:
    """What the finish decides on; None unless the day's close is at its finish."""
    current = read_day(s, day)
    if current is None or current.status != "closing" or current.phase != "finish":
        return None
    tallies = _tally_shards(s, day)
    spend = {k: sum(int(d.get(f) or 0) for d in tallies) for k, f in SPEND_FIELDS.items()}
    return FinishScene(
        current,
        day_context(s, day),
        _interventions(s, current.intervention_ids),
        current_plan(s, day),
        _results(s, day, "settle", close_rules.SettleDigest),
        Spend(**spend),
    )


def write_final(s: str, day: int, final: close_rules.Final, applied: dict[str, float]) -> None:
    """The next day's context, the proposals, the society-level events and the summary; the
    interventions on the pool marked applied."""
    writes: list[tuple[str, DocModel]] = [(sp.state_path(s, day + 1, "context"), final.context)]
    writes += [(sp.sub(s, sp.PROPOSAL, proposalId=p.id), p) for p in final.proposals]
    writes += [(sp.sub(s, sp.EVENT, eventId=e.id), e) for e in final.events]
    writes.append((sp.sub(s, sp.SUMMARY, day=sp.day_id(day)), final.summary))
    write_all(writes)
    _mark_applied(s, day, applied)


def with_next_day(s: str, day: int, closed_at: Any) -> Callable[[firestore.WriteBatch], None]:
    """The writes that go with marking the day closed: the summary's time, the next day
    ready."""

    def also(batch: firestore.WriteBatch) -> None:
        summary = store.ref(sp.sub(s, sp.SUMMARY, day=sp.day_id(day)))
        batch.update(summary, DaySummary.fields(closed_at=closed_at))
        batch.set(store.ref(sp.day_path(s, day + 1)), Day(day=day + 1).to_firestore())

    return also


def fail(s: str, failure: dict[str, Any]) -> None:
    store.ref(sp.society(s)).update(Society.fields(status="failed", failure=failure))


# --- the watchdog -----------------------------------------------------------------------------


def societies() -> Iterator[tuple[str, Society | DocumentError]]:
    """Every society (id, document); a malformed one as its error."""
    for snap in store.db().collection("societies").stream():
        try:
            yield (
                snap.id,
                parse_document(
                    Society, snap.reference.path, {"id": snap.id, **(snap.to_dict() or {})}
                ),
            )
        except DocumentError as error:
            yield snap.id, error


def action_ids(s: str, day: int) -> set[str]:
    """The ids of every document under the day's actions (strays included)."""
    return {ref.id for ref in _actions(s, day).list_documents()}
