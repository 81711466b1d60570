"""One shard's phase of a day's close: its members' snapshots, its actions and what the
society-level steps decided, read; the phase computed (``shared.society.rules``); its outputs
written, then its result (the phase's done mark for this shard).

Every write is a deterministic set of what the fixed inputs give, so a phase run again (a
duplicate, a take-over after a kill) writes the same documents. The one input that could still
change, the actions (a late turn may write one after the close started), is fixed per shard
once, by the first run of its ``act`` phase (``fix-{k}``, created once); every later run and
phase resolves those.
"""

from __future__ import annotations

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import documents, errors, store
from functions.society import docs
from shared.models import DocModel, parse_document
from shared.society import identity, rules, shards
from shared.society import paths as sp
from shared.society.models import ActionRecord, Day, Member, SocietySettings
from shared.society.rules import Delivery


class Fixed(DocModel):
    """``close/fix-{k}``: the actions shard k resolves."""

    action_ids: list[str] = []


class Inbox(DocModel):
    """``closeInbox/{to}-{from}``: deliveries from one shard's actions to another's members."""

    to: int
    sender: int
    deliveries: list[Delivery] = []


def part_path(s: str, day: int, part: str) -> str:
    return sp.sub(s, sp.CLOSE_PART, day=sp.day_id(day), part=part)


def result_id(phase: str, shard: int) -> str:
    return f"{phase}-{shard:05d}"


def done(s: str, day: int, phase: str, shard: int) -> bool:
    return store.snapshot_data(part_path(s, day, result_id(phase, shard))) is not None


def run(s: str, day: Day, phase: str, shard: int) -> None:
    """Run ``phase`` for ``shard`` unless its result is written already."""
    if done(s, day.day, phase, shard):
        return
    given = _input(s, day, shard)
    settings = given.settings
    if phase == "act":
        _act(s, day, shard, given)
    elif phase == "need":
        plan = read_plan(s, day.day, "act")
        lack = rules.need(given, plan.ids[shard], _inbox(s, day.day, shard))
        _done(s, day.day, "need", shards.NeedDigest(shard=shard, lack=lack))
    else:
        plan = current_plan(s, day.day)
        budget = shards.budget(plan, shard)
        inbox = _inbox(s, day.day, shard)
        settled = rules.settle(given, plan.ids[shard], inbox, budget, plan.outcomes)
        _write_settled(s, day.day, settled)
        _done(s, day.day, "settle", shards.digest_settled(shard, settings, settled))


def _act(s: str, day: Day, shard: int, given: rules.ShardInput) -> None:
    acted = rules.act(given)
    docs.write_all(
        (
            sp.sub(s, sp.CLOSE_INBOX, day=sp.day_id(day.day), pair=f"{to:05d}-{shard:05d}"),
            docs.model_doc(Inbox(to=to, sender=shard, deliveries=found)),
        )
        for to, found in sorted(shards.route(acted.outbox, day.shard_size).items())
    )
    _done(s, day.day, "act", shards.act_digest(shard, acted))


def _done(s: str, day: int, phase: str, digest: DocModel) -> None:
    data = {**docs.model_doc(digest), "phase": phase}
    shard = int(data["shard"])
    store.ref(part_path(s, day, result_id(phase, shard))).set(data)


def _write_settled(s: str, day: int, settled: rules.Settled) -> None:
    nxt = day + 1
    doc = docs.model_doc
    writes = [(docs.snapshot_path(s, nxt, i), doc(m)) for i, m in settled.members.items()]
    writes += [(sp.sub(s, sp.MEMBER, agentId=i), doc(m)) for i, m in settled.members.items()]
    writes += [(sp.sub(s, sp.POST, postId=p.id), doc(p)) for p in settled.posts]
    writes += [(sp.sub(s, sp.MESSAGE, messageId=m.id), doc(m)) for m in settled.messages]
    writes += [(sp.sub(s, sp.EVENT, eventId=e.id), doc(e)) for e in settled.events]
    docs.write_all(writes)
    docs.mark_applied(s, day, settled.applied)


def read_plan(s: str, day: int, after: str) -> shards.Plan:
    return store.read(shards.Plan, part_path(s, day, f"plan-{after}"))


def current_plan(s: str, day: int) -> shards.Plan:
    """The plan the ``settle`` phase and the finish use: with the pool's budgets if the day
    had a ``need`` phase."""
    plan = read_plan(s, day, "act")
    return read_plan(s, day, "need") if plan.net else plan


def _inbox(s: str, day: int, shard: int) -> list[Delivery]:
    ref = store.db().collection(sp.collection(s, sp.CLOSE_INBOX, day=sp.day_id(day), pair="x"))
    found = ref.where(filter=firestore.FieldFilter("to", "==", shard)).stream()
    return [d for snap in found for d in Inbox.model_validate(snap.to_dict() or {}).deliveries]


def _input(s: str, day: Day, shard: int) -> rules.ShardInput:
    context = docs.day_context(s, day.day)
    first, last = shards.ranges(context.agents, day.shard_size)[shard]
    members = _members(s, day.day, first, last)
    acting = [a for a in day.acting if first <= a <= last]
    return rules.ShardInput(
        day=day.day,
        settings=day.settings or SocietySettings(),
        context=context,
        members=members,
        acting=acting,
        actions=_actions(s, day, shard, acting),
        interventions=[
            (iid, item)
            for iid, item in docs.read_interventions(s, day.intervention_ids)
            if first <= item.agent_id <= last
        ],
    )


def _members(s: str, day: int, first: int, last: int) -> dict[int, Member]:
    refs = [store.ref(docs.snapshot_path(s, day, i)) for i in range(first, last + 1)]
    snaps = [snap for snap in store.db().get_all(refs) if snap.exists]
    members = documents.valid(snaps, lambda path, data: parse_document(Member, path, data))
    return {m.agent_id: m for m in members}


def _actions(s: str, day: Day, shard: int, acting: list[int]) -> list[ActionRecord]:
    """The shard's actions: those its first ``act`` run fixed, read and told apart again (one
    changed since is no action either)."""
    path = part_path(s, day.day, f"fix-{shard:05d}")
    data = store.snapshot_data(path)
    if data is not None:
        return _read(s, day, parse_document(Fixed, path, data).action_ids)
    per_day = day.settings.actions_per_day if day.settings else 1
    found = _read(s, day, [f"{a}-{k}" for a in acting for k in range(1, per_day + 1)])
    fixed = Fixed(action_ids=sorted(f"{a.agent_id}-{a.slot}" for a in found))
    try:
        store.ref(path).create(docs.model_doc(fixed))
    except gexc.AlreadyExists:  # a run beside this one fixed them first: its set holds
        return _actions(s, day, shard, acting)
    return found


def _read(s: str, day: Day, ids: list[str]) -> list[ActionRecord]:
    """The documents among ``ids`` that are actions (another is recorded: its body disagrees
    with its id)."""
    refs = [store.ref(docs.action_path(s, day.day, a)) for a in ids]
    snaps = [snap for snap in (store.db().get_all(refs) if refs else []) if snap.exists]
    found = identity.sort(
        ((snap.reference.path, store.data_of(snap) or {}) for snap in snaps),
        identity.Expected.of(day),
    )
    for error in found.errors:
        errors.record_error(errors.current_function(), error)
    return list(found.actions.values())
