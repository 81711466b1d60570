"""Issue 28 row 9 on the real emulators with the scripted model: a debate's data entries. An
entry without ``data`` and a 200 KB entry were accepted silently (one leaf agent held 36,942
tokens against a limit of 120). Now the start refuses either before any model call, with one
error record naming the debate document and the entry's field, and the debate FAILED; writing
the fix (a touch) wakes it. An entry a little over the limit is cut into pieces that fit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from experiment_state import settle

from shared.debate import packing
from tools.debate import state as debate_state

pytestmark = pytest.mark.usefixtures("clean")

EXAMPLE = Path(__file__).resolve().parents[2] / "templates" / "debates" / "stock_trading.json"


def _settings() -> dict[str, Any]:
    """The stock-trading example, one layer and no argument rounds (the data is the point)."""
    return {**json.loads(EXAMPLE.read_text()), "numRounds": 0, "numLayers": 1}


def _refused(runtime, db, d: str, field: str, monkeypatch) -> debate_state.DebateState:
    """FAILED with one record naming ``debates/{d}`` and ``field``, nothing called or made;
    watchdog ticks leave it so (no second record)."""
    runtime.wait_until_idle(timeout=60)
    monkeypatch.setenv("DLAB_DEBATE_STALE_SECONDS", "0")
    runtime.tick()
    runtime.wait_until_idle(timeout=60)
    s = debate_state.read(db, d)
    assert s.failed, s.progress()
    assert s.debate.failure is not None
    assert (s.debate.failure.document, s.debate.failure.field) == (f"debates/{d}", field)
    [record] = s.errors
    assert (record["document"], record["field"]) == (f"debates/{d}", field)
    assert record["occurrences"] == 1
    assert s.model_calls == 0 and s.agents == [] and s.layers == []
    return s


def test_an_entry_without_data_fails_the_start_naming_its_field_and_the_fix_wakes_it(
    runtime, db, monkeypatch
) -> None:
    settings = _settings()
    del settings["data"][3]["data"]
    db.document("debates/nodata").set(settings)
    s = _refused(runtime, db, "nodata", "data[3].data", monkeypatch)
    assert "missing" in s.debate.failure.reason

    fixed = _settings()["data"]
    db.document("debates/nodata").update({"data": fixed})  # the fix is the touch
    settle(runtime, lambda: debate_state.read(db, "nodata").done, rounds=20)
    s = debate_state.read(db, "nodata")
    assert s.debate.failure is None and s.debate.decision, s.progress()


def test_an_entry_too_large_for_the_leaf_agents_is_refused_not_packed(
    runtime, db, monkeypatch
) -> None:
    settings = _settings()
    settings["data"][5]["data"] = "Supply chain notes, line by line. " * 6000  # 200 KB
    db.document("debates/huge").set(settings)
    s = _refused(runtime, db, "huge", "data[5].data", monkeypatch)
    assert "tokenLimit is 120" in s.debate.failure.reason


def test_an_entry_over_the_limit_is_cut_and_no_leaf_agent_holds_more(runtime, db) -> None:
    settings = _settings()
    report = " ".join(f"Plant {i} ships {i * 37 % 900} units a week." for i in range(30))
    settings["data"][0]["data"] = report  # three or so times the limit of 120
    db.document("debates/cut").set(settings)
    settle(runtime, lambda: debate_state.read(db, "cut").done, rounds=20)
    s = debate_state.read(db, "cut")
    assert s.errors == [], s.errors
    leaves = [a for a in s.agents if a.role == "leaf" and a.dynamic]
    assert all(a.data_tokens <= s.debate.token_limit for a in leaves), [
        (a.name, a.data_tokens) for a in leaves
    ]
    held = [e for a in leaves for e in a.entries if packing.PART in e]
    assert len(held) >= 2 and {a.category for a in leaves if 0 in a.entry_indexes} == {"Company"}
    assert " ".join(e["data"] for e in held).split() == report.split()
