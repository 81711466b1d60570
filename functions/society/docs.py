"""Typed reads and batched writes of a society's documents."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore import Increment
from pydantic import BaseModel

from functions import documents, store, transactions
from shared.models import DocumentError, parse_document
from shared.society import identity
from shared.society import paths as sp
from shared.society.models import Day, DayContext, Intervention, Member, Society
from shared.society.prompts import SocietyPrompts
from shared.society.rules import Spend

M = TypeVar("M", bound=BaseModel)
BATCH = 200
"""Writes per batch (Firestore allows 500)."""
WRITERS = 4


def society_path(s: str) -> str:
    return sp.society(s)


def day_path(s: str, day: int) -> str:
    return sp.sub(s, sp.DAY, day=sp.day_id(day))


def state_path(s: str, day: int, part: str) -> str:
    return sp.sub(s, sp.DAY_STATE, day=sp.day_id(day), part=part)


def snapshot_path(s: str, day: int, agent: int) -> str:
    return sp.sub(s, sp.DAY_MEMBER, day=sp.day_id(day), agentId=agent)


def action_path(s: str, day: int, action_id: str) -> str:
    return sp.sub(s, sp.ACTION, day=sp.day_id(day), actionId=action_id)


def actions_collection(s: str, day: int) -> firestore.CollectionReference:
    return store.db().collection(sp.collection(s, sp.ACTION, day=sp.day_id(day)))


def read_society(s: str, transaction: firestore.Transaction | None = None) -> Society:
    return store.read(Society, society_path(s), transaction)


def read_day(s: str, day: int, transaction: firestore.Transaction | None = None) -> Day | None:
    path = day_path(s, day)
    data = store.snapshot_data(path, transaction)
    return None if data is None else parse_document(Day, path, data)


def read_context(s: str, day: int) -> DayContext:
    return store.read(DayContext, state_path(s, day, "context"))


def read_snapshot(s: str, day: int, agent: int) -> Member:
    return store.read(Member, snapshot_path(s, day, agent))


def read_snapshots(s: str, day: int) -> dict[int, Member]:
    """Every member's state at the start of ``day`` (a malformed one is recorded, left out)."""
    ref = store.db().collection(sp.collection(s, sp.DAY_MEMBER, day=sp.day_id(day)))
    members = documents.valid(ref.stream(), lambda path, data: parse_document(Member, path, data))
    return {m.agent_id: m for m in members}


def read_interventions(s: str, ids: list[str]) -> list[tuple[str, Intervention]]:
    """The interventions a close fixed when it started (a malformed one recorded, left out)."""
    refs = [store.ref(sp.sub(s, sp.INTERVENTION, interventionId=i)) for i in ids]
    snaps = list(store.db().get_all(refs)) if refs else []
    return documents.valid(
        [snap for snap in snaps if snap.exists],
        lambda path, data: (path.rsplit("/", 1)[1], parse_document(Intervention, path, data)),
    )


def mark_applied(s: str, day: int, applied: dict[str, float]) -> None:
    for iid, amount in sorted(applied.items()):
        store.ref(sp.sub(s, sp.INTERVENTION, interventionId=iid)).update(
            Intervention.fields(applied_day=day, applied_amount=amount)
        )


def read_prompts(s: str) -> SocietyPrompts:
    path = sp.sub(s, sp.PROMPTS, promptId="default")
    data = store.snapshot_data(path)
    return SocietyPrompts() if data is None else parse_document(SocietyPrompts, path, data)


def latest_day(s: str) -> Day | None:
    ref = store.db().collection(sp.collection(s, sp.DAY, day="x"))
    query = ref.order_by("day", direction=firestore.Query.DESCENDING).limit(1)
    for snap in query.stream():
        return parse_document(Day, snap.reference.path, snap.to_dict() or {})
    return None


def count_actions(s: str, day: int) -> int:
    """Every document under the day's actions, strays included: at least the actions."""
    result = actions_collection(s, day).count().get()
    return int(result[0][0].value)


def read_actions(s: str, day: Day) -> identity.Sorted:
    """The day's action documents told apart (``shared.society.identity``): the actions, and
    an error for each document that is none (its id is no acting member's slot, or its body
    disagrees with its id)."""
    snaps = actions_collection(s, day.day).stream()
    found = ((snap.reference.path, store.data_of(snap) or {}) for snap in snaps)
    return identity.sort(found, identity.Expected.of(day))


def may_close(s: str, day: Day) -> bool:
    """Every action the open ``day`` expects is in, or its close started already (then the
    claim decides). The day itself is read first: the deliveries that arrive after the claim
    (all of a large day's, when its action events queue behind its turns) stop at that one
    read. Then the count query, cheap and enough while any action is missing; a stray document
    is no action, so then the documents are read."""
    fresh = read_day(s, day.day)
    if fresh is None or fresh.status != "open":
        return True
    if count_actions(s, day.day) < day.expected:
        return False
    return len(read_actions(s, day).actions) >= day.expected


def tally_ref(s: str, day: int, agent: int) -> firestore.DocumentReference:
    shard = agent % sp.TALLY_SHARDS
    return store.ref(sp.sub(s, sp.TALLY, day=sp.day_id(day), shard=shard))


SPEND_FIELDS = {"model_calls": "calls", "prompt_tokens": "promptTokens"}
SPEND_FIELDS |= {"completion_tokens": "completionTokens"}
"""Spend fields of a tally shard: every model attempt of the day's turns, counted as it is
made (in the action's batch, or on its own when the attempt failed), so the day's summary
counts what the provider received, not only the calls of the actions written."""


def spend_fields(spend: Spend) -> dict[str, Any]:
    return {SPEND_FIELDS[k]: Increment(v) for k, v in dataclasses.asdict(spend).items() if v}


def add_spend(s: str, day: int, agent: int, spend: Spend) -> None:
    """Count the model attempts of a turn attempt that wrote no action (it raised)."""
    fields = spend_fields(spend)
    if fields:
        tally_ref(s, day, agent).set(fields, merge=True)


def _shards(s: str, day: int) -> list[dict[str, Any]]:
    refs = [
        store.ref(sp.sub(s, sp.TALLY, day=sp.day_id(day), shard=k)) for k in range(sp.TALLY_SHARDS)
    ]
    return [snap.to_dict() or {} for snap in store.db().get_all(refs)]


def day_spend(s: str, day: int) -> Spend:
    shards = _shards(s, day)
    total = {k: sum(int(d.get(f) or 0) for d in shards) for k, f in SPEND_FIELDS.items()}
    return Spend(**total)


def count_hint(s: str, day: int) -> int:
    """The sharded tally's sum: at most the actions created (an increment goes with its action's
    creation in one batch), or more (a human's action is counted by its trigger, which may run
    twice). Only a hint that the real count is worth making."""
    return sum(int(d.get("count", 0)) for d in _shards(s, day))


def write_all(writes: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """Set every (path, data) in batches committed in parallel; the number written. Each set
    replaces the document, so writing the same outcome twice leaves the same documents."""
    items = list(writes)
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


def model_doc(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="python")


def require(value: M | None, path: str) -> M:
    if value is None:
        raise DocumentError(path, "(document)", "document does not exist")
    return value


Decide = Callable[[Day | None], dict[str, Any] | None]


def change_day(
    s: str, day: int, decide: Decide, also: Callable[[Any], None] | None = None
) -> Day | None:
    """Update the day document as ``decide`` says, on the condition that nobody changed it since
    it was read (an optimistic write: no transaction holds it, so a hundred deliveries asking at
    once do not queue on a lock). ``also`` adds writes to the same atomic batch. The updated day,
    or None when ``decide`` declines or another delivery changed the day first."""
    path = day_path(s, day)
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
        return parse_document(Day, path, {**model_doc(current), **update})
    return None


_cache: dict[tuple[str, ...], Any] = {}
_cache_lock = threading.Lock()
CACHE_SIZE = 512


def cached(key: tuple[str, ...], read: Callable[[], M]) -> M:
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
    return cached(key, lambda: current)


def day_context(s: str, day: int) -> DayContext:
    return cached(("context", s, str(day)), lambda: read_context(s, day))


def day_prompts(s: str, day: int) -> SocietyPrompts:
    """The prompts as the day's first turn in this instance read them: an edit applies from the
    next day on (or to a day's turns on instances that had not read them yet)."""
    return cached(("prompts", s, str(day)), lambda: read_prompts(s))
