"""The society live view's data: one read of a society's state as pydantic models (tested
without a browser; the page redraws from its JSON)."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore
from pydantic import BaseModel

from shared.society import paths as sp
from shared.society.models import Day, DaySummary, Member, Society

MEMBER_ROWS = 200
"""Rows of the members table (a 1,000-agent society shows its first 200)."""


class MemberRow(BaseModel):
    id: int
    name: str
    personality: str
    human: bool
    status: str
    food: float
    energy: float
    materials: float


class DayRow(BaseModel):
    day: int
    actions: int
    invalid: int
    rejected: int
    no_action: int
    active: int
    dormant: int
    model_calls: int
    prompt_tokens: int
    opened: int
    passed: int
    failed: int
    pool_food: float
    reasons: list[str] = []


class SocietyState(BaseModel):
    id: str
    name: str = ""
    status: str = ""
    day: int = 0
    day_status: str = ""
    acted: int = 0
    expected: int = 0
    members: list[MemberRow] = []
    days: list[DayRow] = []
    proposals: list[dict[str, Any]] = []
    laws: list[dict[str, Any]] = []
    posts: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    problem: str = ""


def _collection(db: firestore.Client, sid: str, pattern: str, **params: Any) -> Any:
    return db.collection(sp.collection(sid, pattern, **params))


def read_state(db: firestore.Client, sid: str) -> SocietyState:
    snap = db.document(sp.society(sid)).get()
    if not snap.exists:
        return SocietyState(id=sid, problem="no such society")
    try:
        society = Society.model_validate({"id": sid, **(snap.to_dict() or {})})
    except ValueError as error:
        return SocietyState(id=sid, problem=f"the society document is malformed: {error}")
    state = SocietyState(id=sid, name=society.name, status=society.status)
    days = _collection(db, sid, sp.DAY, day="x").order_by("day", direction="DESCENDING").limit(1)
    latest = next((Day.model_validate(d.to_dict()) for d in days.stream()), None)
    if latest is not None:
        _day(db, sid, latest, state)
    state.days = [
        _row(DaySummary.model_validate(s.to_dict()))
        for s in _collection(db, sid, sp.SUMMARY, day="x").stream()
    ]
    state.days.sort(key=lambda r: r.day)
    state.errors = [
        {k: e.get(k) for k in ("document", "field", "reason", "occurrences")}
        for e in (
            s.to_dict() or {}
            for s in _collection(db, sid, sp.ERROR_RECORD, errorId="x").limit(20).stream()
        )
    ]
    return state


def _day(db: firestore.Client, sid: str, latest: Day, state: SocietyState) -> None:
    state.day, state.day_status, state.expected = latest.day, latest.status, latest.expected
    did = sp.day_id(latest.day)
    state.acted = len(list(_collection(db, sid, sp.ACTION, day=did).list_documents()))
    members = _collection(db, sid, sp.DAY_MEMBER, day=did).limit(MEMBER_ROWS).stream()
    rows = [Member.model_validate(m.to_dict()) for m in members]
    state.members = sorted(
        (
            MemberRow(
                id=m.agent_id,
                name=m.display_name,
                personality=m.personality,
                human=m.human,
                status=m.status,
                food=m.resources.food,
                energy=m.resources.energy,
                materials=m.resources.materials,
            )
            for m in rows
        ),
        key=lambda r: r.id,
    )
    context = db.document(sp.sub(sid, sp.DAY_STATE, day=did, part="context")).get().to_dict() or {}
    state.proposals = context.get("proposals") or []
    state.laws = context.get("laws") or []
    state.posts = list(reversed(context.get("posts") or []))[:10]


def _row(s: DaySummary) -> DayRow:
    return DayRow(
        day=s.day,
        actions=sum(s.actions.values()),
        invalid=len(s.invalid),
        rejected=len(s.rejected),
        no_action=len(s.no_action),
        active=s.active,
        dormant=s.dormant,
        model_calls=s.model_calls,
        prompt_tokens=s.prompt_tokens,
        opened=len(s.proposals_opened),
        passed=len(s.proposals_passed),
        failed=len(s.proposals_failed),
        pool_food=s.pool.food,
        reasons=[f"#{i['agentId']}: {i['reason']}" for i in (s.invalid + s.rejected)][:5],
    )
