"""Hostile action documents in a society (issue 28 rows 7 and 8), on the real emulators: an
action's identity comes from its document id, a body that disagrees or an id that is no acting
member's slot is one error record naming the document and field, and not an action; a stray
document neither acts nor counts toward "everyone acted"; ``tools.society check`` catches a day
that resolved either."""

from __future__ import annotations

import io
import time
from contextlib import redirect_stdout
from typing import Any

import pytest
from google.cloud import firestore

from shared.models import now
from tools.society import __main__ as society_cli
from tools.society import client

pytestmark = pytest.mark.usefixtures("clean")

BASE = {"days": 1, "seed": 5, "dayDeadlineS": 300, "redriveS": 0.1}
FARM = {"action": "work", "work_type": "farm", "hours": 8}
STRAYS: dict[str, dict[str, Any]] = {
    "99-1": {"agentId": 99, "day": 1, "action": FARM},  # no such member
    "1-2": {"agentId": 1, "slot": 2, "day": 1, "action": FARM},  # beyond actionsPerDay
    "x": {"agentId": 2, "day": 1, "action": FARM},  # not an action id at all
}


def _actions(sid: str) -> str:
    return f"societies/{sid}/days/00001/actions"


def _write(db: firestore.Client, sid: str, docs: dict[str, dict[str, Any]]) -> None:
    """In one batch: every trigger sees them all."""
    batch = db.batch()
    for doc_id, data in docs.items():
        batch.set(db.document(f"{_actions(sid)}/{doc_id}"), data)
    batch.commit()


def _day_status(db: firestore.Client, sid: str) -> str:
    return db.document(f"societies/{sid}/days/00001").get().to_dict()["status"]


def _errors(db: firestore.Client, sid: str) -> set[tuple[str, str]]:
    return {(r["document"], r["field"]) for r in client.error_records(db, sid)}


def _check(sid: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = society_cli.main(["check", sid])
    return code, out.getvalue()


def _human_day(db: firestore.Client, runtime: Any, strays: dict[str, dict[str, Any]]) -> str:
    """Member 3 is human: the day waits for it. ``strays`` are written while it does; the
    watchdog then counts the day for real; then member 3 acts."""
    sid = client.create(db, {**BASE, "agents": 3, "humans": [3]})
    runtime.wait_until_idle(timeout=30)
    assert _day_status(db, sid) == "open"
    if strays:
        _write(db, sid, strays)
        runtime.wait_until_idle(timeout=30)
        runtime.tick()  # past redriveS: the watchdog's exact count
        runtime.wait_until_idle(timeout=30)
        assert _day_status(db, sid) == "open", "a stray document counted toward everyone acted"
    _write(db, sid, {"3-1": {"agentId": 3, "day": 1, "action": FARM}})
    runtime.wait_until_idle(timeout=30)
    assert _day_status(db, sid) == "closed"
    return sid


def test_stray_action_documents_do_not_complete_a_day_and_leave_the_state_as_a_clean_run(
    db, runtime
):
    calm = _human_day(db, runtime, {})
    wild = _human_day(db, runtime, STRAYS)
    (summary,) = client.summaries(db, wild)
    assert summary.no_action == [] and summary.rejected == []
    assert client.state_hash(db, wild) == client.state_hash(db, calm)
    assert _errors(db, wild) == {
        (f"{_actions(wild)}/{doc_id}", "(document id)") for doc_id in STRAYS
    }
    assert len(client.error_records(db, wild)) == len(STRAYS)  # one record per document
    code, out = _check(wild)
    assert code == 0, out


def test_identity_comes_from_the_document_id_and_check_catches_a_day_that_trusted_a_body(
    db, runtime
):
    sid = client.create(db, {**BASE, "agents": 4, "humans": [2, 3, 4], "dayDeadlineS": 2})
    runtime.wait_until_idle(timeout=30)
    _write(
        db,
        sid,
        {
            "2-1": {"agentId": 3, "day": 1, "action": FARM},  # member 2's slot, says member 3
            "3-1": {"agentId": 3, "day": 1, "action": FARM},
            "4-1": {"agentId": 4, "day": 1, "action": {"action": "idle"}},
            "4-2": {"agentId": 4, "day": 1, "action": FARM},  # no slot: the id says 2
        },
    )
    runtime.wait_until_idle(timeout=30)
    assert _day_status(db, sid) == "open"  # member 2 has not acted: the day waits its deadline
    deadline = db.document(f"societies/{sid}/days/00001").get().to_dict()["deadline"]
    time.sleep(max(0.0, (deadline - now()).total_seconds()) + 0.1)
    runtime.tick()
    runtime.wait_until_idle(timeout=30)
    assert _day_status(db, sid) == "closed"
    (summary,) = client.summaries(db, sid)
    assert summary.no_action == [2] and summary.rejected == []
    farmed = [e.agent_id for e in client.events(db, sid) if e.kind == "work"]
    assert farmed.count(3) == 1 and farmed.count(4) == 0
    members, _ = client.snapshot(db, sid, 2)
    assert members[3].resources.food == 16.2  # 10 + 8 farmed - 10% to the pool - 1 eaten, once
    assert _errors(db, sid) == {
        (f"{_actions(sid)}/2-1", "agentId"),
        (f"{_actions(sid)}/4-2", "(document id)"),
    }
    assert len(client.error_records(db, sid)) == 2
    assert _check(sid)[0] == 0
    # A close that trusted the bodies resolved both: the check names each.
    fixed = f"societies/{sid}/days/00001/close/fix-00000"  # what shard 0 resolved
    db.document(fixed).set({"actionIds": ["1-1", "2-1", "3-1", "4-2"]})
    code, out = _check(sid)
    assert code == 1 and "'2-1': agentId" in out and "'4-2': (document id)" in out, out
