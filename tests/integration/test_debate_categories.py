"""Issue 31 item 3: a debate whose template gives no ``categories`` (the model names them)
reaches DONE on the default scripted model. Before, every schema-valid scripted reply named one
category per entry and failed "use at most 8 categories" on each attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from experiment_state import settle

from tools.debate import state as debate_state

pytestmark = pytest.mark.usefixtures("clean")

EXAMPLE = Path(__file__).resolve().parents[2] / "templates" / "debates" / "stock_trading.json"


def test_a_debate_without_categories_reaches_done_on_the_scripted_model(runtime, db) -> None:
    settings = json.loads(EXAMPLE.read_text())
    data = [{k: v for k, v in e.items() if k != "category"} for e in settings["data"]]
    settings.update(categories=[], maxCategories=3, numRounds=1, data=data)
    settings.pop("model", None)  # the default model: the scripted one
    db.document("debates/uncategorized").set(settings)
    settle(runtime, lambda: debate_state.read(db, "uncategorized").done, rounds=30)

    s = debate_state.read(db, "uncategorized")
    assert s.errors == []
    assert s.done and s.debate.decision, s.debate
    layer1 = {c.name for c in s.clusters if c.layer == 1}
    assert 1 <= len(layer1) <= 3, layer1
    leaves = [a for a in s.agents if a.dynamic and a.role == "leaf"]
    assert sorted(i for a in leaves for i in a.entry_indexes) == list(range(len(data)))
