"""A society from outside: create one, drive it, read it back, check it, hash and export it.

Used by the command line (``python -m tools.society``), the tests and the benchmark. Works on
the emulator (FIRESTORE_EMULATOR_HOST) or a real project.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.models import DocumentError, now, parse_document
from shared.society import identity
from shared.society import paths as sp
from shared.society.models import (
    RESOURCES,
    Day,
    DayContext,
    DaySummary,
    Event,
    Intervention,
    Member,
    Proposal,
    Resources,
    Society,
    SocietySettings,
)
from tools.owner import owned

TOLERANCE = 1e-6


def create(
    db: firestore.Client, settings: dict[str, Any], name: str = "", society_id: str = ""
) -> str:
    """Write a society document (validated first: a bad setting fails here, naming it)."""
    sid = society_id or uuid.uuid4().hex[:12]
    society = Society(id=sid, name=name, settings=SocietySettings.model_validate(settings))
    db.document(sp.society(sid)).set(owned({**society.to_firestore(), "createdAt": now()}))
    return sid


def from_file(path: Path) -> tuple[str, dict[str, Any]]:
    """A society file: ``{"name": ..., "settings": {...}}`` (or the settings alone)."""
    data = json.loads(path.read_text())
    if "settings" in data:
        return str(data.get("name", "")), dict(data["settings"])
    return "", data


def set_status(db: firestore.Client, sid: str, status: str) -> None:
    db.document(sp.society(sid)).update({"status": status})


def set_setting(db: firestore.Client, sid: str, name: str, value: Any) -> None:
    """Change a setting for the next day. Validated with the others first, so a value the
    society could not run with is refused (DocumentError naming the society and the setting)
    and never written."""
    path = sp.society(sid)
    snap = db.document(path).get()
    if not snap.exists:
        raise DocumentError(path, "(document)", "document does not exist")
    settings = {**((snap.to_dict() or {}).get("settings") or {}), name: value}
    parse_document(SocietySettings, path, settings)
    db.document(path).update({f"settings.{name}": value})


def intervene(
    db: firestore.Client, sid: str, agent: int, resource: str, amount: float, note: str = ""
) -> str:
    """Give (amount > 0) or take resources; applied when the current day closes."""
    item = Intervention(agent_id=agent, resource=resource, amount=amount, note=note)  # type: ignore[arg-type]
    iid = f"{now().strftime('%Y%m%d%H%M%S%f')}-{uuid.uuid4().hex[:6]}"
    db.document(sp.sub(sid, sp.INTERVENTION, interventionId=iid)).set(
        {**item.to_firestore(), "createdAt": now()}
    )
    return iid


def read_society(db: firestore.Client, sid: str) -> Society:
    snap = db.document(sp.society(sid)).get()
    return Society.model_validate({"id": sid, **(snap.to_dict() or {})})


def error_records(db: firestore.Client, sid: str) -> list[dict[str, Any]]:
    """The society's error records (``societies/{s}/errors``), oldest first."""
    rows = [snap.to_dict() or {} for snap in db.collection(f"{sp.society(sid)}/errors").stream()]
    return sorted(rows, key=lambda r: str(r.get("firstSeen") or ""))


def _all(db: firestore.Client, sid: str, pattern: str, **params: Any) -> list[dict[str, Any]]:
    return [
        s.to_dict() or {} for s in db.collection(sp.collection(sid, pattern, **params)).stream()
    ]


def days(db: firestore.Client, sid: str) -> list[Day]:
    return sorted(
        (Day.model_validate(d) for d in _all(db, sid, sp.DAY, day="x")), key=lambda d: d.day
    )


def summaries(db: firestore.Client, sid: str) -> list[DaySummary]:
    found = (DaySummary.model_validate(d) for d in _all(db, sid, sp.SUMMARY, day="x"))
    return sorted(found, key=lambda s: s.day)


def events(db: firestore.Client, sid: str) -> list[Event]:
    found = (Event.model_validate(d) for d in _all(db, sid, sp.EVENT, eventId="x"))
    return sorted(found, key=lambda e: e.id)


def proposals(db: firestore.Client, sid: str) -> list[Proposal]:
    found = (Proposal.model_validate(d) for d in _all(db, sid, sp.PROPOSAL, proposalId="x"))
    return sorted(found, key=lambda p: p.id)


def snapshot(db: firestore.Client, sid: str, day: int) -> tuple[dict[int, Member], DayContext]:
    """Members and context at the start of ``day``."""
    did = sp.day_id(day)
    members = {
        m["agentId"]: Member.model_validate(m) for m in _all(db, sid, sp.DAY_MEMBER, day=did)
    }
    ctx = db.document(sp.sub(sid, sp.DAY_STATE, day=did, part="context")).get().to_dict()
    return members, DayContext.model_validate(ctx or {"day": day})


def closed_days(db: firestore.Client, sid: str) -> int:
    return max((d.day for d in days(db, sid) if d.status == "closed"), default=0)


def state_hash(db: firestore.Client, sid: str) -> str:
    """A hash of the society's state after its last closed day: members, context, proposals,
    posts and events (no timestamps, no ids that name the society)."""
    last = closed_days(db, sid)
    members, context = snapshot(db, sid, last + 1)
    state = {
        "members": {i: m.model_dump(mode="json") for i, m in sorted(members.items())},
        "context": context.model_dump(mode="json"),
        "proposals": [p.model_dump(mode="json") for p in proposals(db, sid)],
        "posts": sorted(
            (p.get("id"), p.get("authorId"), p.get("content"))
            for p in _all(db, sid, sp.POST, postId="x")
        ),
        "events": [(e.id, e.kind, e.agent_id, e.description) for e in events(db, sid)],
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


@dataclasses.dataclass
class Audit:
    days: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _wealth(members: dict[int, Member], context: DayContext) -> Resources:
    total = context.pool
    for m in members.values():
        total = total.plus(m.resources)
    return total


def audit(db: firestore.Client, sid: str) -> Audit:
    """The invariants, checked for every closed day: resources conserved (change = production
    - consumption +/- interventions), no negative balance, at most the allowed actions per
    member, every vote counted once, every proposal closed once, no day skipped or run twice."""
    result = Audit()
    all_days = days(db, sid)
    closed = [d for d in all_days if d.status == "closed"]
    result.days = len(closed)
    numbers = [d.day for d in closed]
    if numbers != list(range(1, len(closed) + 1)):
        result.problems.append(f"closed days are not 1..n: {numbers}")
    by_day = {s.day: s for s in summaries(db, sid)}
    for d in closed:
        _check_day(db, sid, d, by_day.get(d.day), result)
    _check_proposals(db, sid, len(closed), result)
    return result


def _check_day(
    db: firestore.Client, sid: str, d: Day, summary: DaySummary | None, out: Audit
) -> None:
    if summary is None:
        out.problems.append(f"day {d.day}: no summary")
        return
    if summary.closed_at != d.closed_at:
        out.problems.append(f"day {d.day}: closed twice (summary and day disagree)")
    before, ctx_before = snapshot(db, sid, d.day)
    after, ctx_after = snapshot(db, sid, d.day + 1)
    start, end = _wealth(before, ctx_before), _wealth(after, ctx_after)
    flow = summary.flow
    for r in RESOURCES:
        expected = flow.production.get(r) - flow.consumption.get(r) + flow.interventions[r]
        change = end.get(r) - start.get(r)
        if abs(change - expected) > TOLERANCE:
            out.problems.append(f"day {d.day}: {r} changed {change:g}, flows say {expected:g}")
    for m in after.values():
        if min(m.resources.get(r) for r in RESOURCES) < 0:
            out.problems.append(f"day {d.day}: agent {m.agent_id} has a negative balance")
    per_day = d.settings.actions_per_day if d.settings else 1
    acted = sum(summary.actions.values()) + len(summary.invalid)
    if acted > len(d.acting) * per_day:
        out.problems.append(f"day {d.day}: {acted} actions for {len(d.acting)} acting members")
    out.problems.extend(_check_actions(db, sid, d))


def _check_actions(db: firestore.Client, sid: str, d: Day) -> list[str]:
    """Every action the day resolved was an acting member's slot whose body agrees with its id
    (``shared.society.identity``): a close that trusted a body, or counted a stray document,
    resolved one that is not."""
    prefix = sp.collection(sid, sp.ACTION, day=sp.day_id(d.day))
    ids = resolved(db, sid, d)
    refs = [db.document(f"{prefix}/{a}") for a in ids]
    found = {snap.id: snap.to_dict() for snap in db.get_all(refs)} if refs else {}
    return identity.audit(d, found, prefix, ids)


def resolved(db: firestore.Client, sid: str, d: Day) -> list[str]:
    """The actions a closed day resolved: its shards' fixed sets (``close/fix-{k}``), or the
    day's own list if it closed before the close was sharded."""
    parts = db.collection(sp.collection(sid, sp.CLOSE_PART, day=sp.day_id(d.day), part="x"))
    fixed = [
        a
        for snap in parts.stream()
        if snap.id.startswith("fix-")
        for a in (snap.to_dict() or {}).get("actionIds", [])
    ]
    return sorted(fixed) or d.action_ids


def _check_proposals(db: firestore.Client, sid: str, last: int, out: Audit) -> None:
    closings: dict[int, int] = {}
    votes: dict[int, dict[int, str]] = {}
    for e in events(db, sid):
        pid = int(e.data.get("proposal") or 0)
        if e.kind in ("proposal_passed", "proposal_failed"):
            closings[pid] = closings.get(pid, 0) + 1
        elif e.kind == "vote":
            votes.setdefault(pid, {})[e.agent_id] = e.data.get("vote", "")
    for p in proposals(db, sid):
        if p.closes_day <= last and closings.get(p.id) != 1:
            out.problems.append(f"proposal {p.id}: closed {closings.get(p.id, 0)} times")
        cast = votes.get(p.id, {})
        tally = {v: sum(1 for x in cast.values() if x == v) for v in ("yes", "no", "abstain")}
        if p.status != "open" and (p.yes, p.no, p.abstain) != (
            tally["yes"],
            tally["no"],
            tally["abstain"],
        ):
            out.problems.append(f"proposal {p.id}: tally {p.yes}/{p.no}/{p.abstain}, votes {tally}")


def export(db: firestore.Client, sid: str, out_dir: Path) -> list[Path]:
    """The run for analysis: events, posts, messages, proposals and actions as JSONL; daily
    summaries and final members as CSV."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, pattern, params in (
        ("events", sp.EVENT, {"eventId": "x"}),
        ("posts", sp.POST, {"postId": "x"}),
        ("messages", sp.MESSAGE, {"messageId": "x"}),
        ("proposals", sp.PROPOSAL, {"proposalId": "x"}),
        ("interventions", sp.INTERVENTION, {"interventionId": "x"}),
    ):
        written.append(_jsonl(out_dir / f"{name}.jsonl", _all(db, sid, pattern, **params)))
    actions = [a for d in days(db, sid) for a in _all(db, sid, sp.ACTION, day=sp.day_id(d.day))]
    written.append(_jsonl(out_dir / "actions.jsonl", actions))
    written.append(_summaries_csv(out_dir / "summaries.csv", summaries(db, sid)))
    last = closed_days(db, sid)
    members, _ = snapshot(db, sid, last + 1)
    written.append(_members_csv(out_dir / "members.csv", members))
    return written


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w") as f:
        for row in sorted(rows, key=lambda r: str(r.get("id", r.get("agentId", "")))):
            f.write(json.dumps(row, default=str, sort_keys=True) + "\n")
    return path


def _summaries_csv(path: Path, rows: list[DaySummary]) -> Path:
    fields = [
        "day", "actions", "invalid", "rejected", "no_action", "model_calls", "prompt_tokens",
        "completion_tokens", "active", "dormant", "opened", "passed", "failed", "built",
        *(f"{k}_{r}" for k in ("total", "pool", "produced", "consumed") for r in RESOURCES),
    ]  # fmt: skip
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(fields)
        for s in rows:
            writer.writerow(
                [
                    s.day, sum(s.actions.values()), len(s.invalid), len(s.rejected),
                    len(s.no_action), s.model_calls, s.prompt_tokens, s.completion_tokens,
                    s.active, s.dormant, len(s.proposals_opened), len(s.proposals_passed),
                    len(s.proposals_failed), s.built,
                    *(s.totals.get(r) for r in RESOURCES), *(s.pool.get(r) for r in RESOURCES),
                    *(s.flow.production.get(r) for r in RESOURCES),
                    *(s.flow.consumption.get(r) for r in RESOURCES),
                ]
            )  # fmt: skip
    return path


def _members_csv(path: Path, members: dict[int, Member]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["agent_id", "display_name", "personality", "human", "status", *RESOURCES])
        for i, m in sorted(members.items()):
            writer.writerow(
                [
                    i,
                    m.display_name,
                    m.personality,
                    m.human,
                    m.status,
                    *(m.resources.get(r) for r in RESOURCES),
                ]
            )
    return path
