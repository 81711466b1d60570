"""The debate's pure parts: offline token counts, categorization checks, packing by the token
budget, the seed's naming, the rule for debating, cluster formation and the final decision."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.debate import clustering, decision, kits, naming, packing, tokens
from shared.debate import stock_trading as stock
from shared.debate.models import Debate, DebateMode, UserFunctions
from shared.models import DocumentError
from shared.stages import AnswerValidationError

EXAMPLE = Path(__file__).resolve().parents[2] / "templates" / "debates" / "stock_trading.json"


def test_token_counts_work_in_a_fresh_process_without_network() -> None:
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from shared.debate import tokens\n"
        "print(tokens.count('hello world'))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "2"


def test_categorization_reply_must_cover_every_entry_once() -> None:
    keys = ["e0", "e2"]
    assert packing.check_categories({"e0": "Macro", "e2": "Social"}, keys, ["Macro", "Social"], 5)
    with pytest.raises(AnswerValidationError, match="missing: \\['e2'\\]"):
        packing.check_categories({"e0": "Macro"}, keys, [], 5)
    with pytest.raises(AnswerValidationError, match="invented: \\['e9'\\]"):
        packing.check_categories({"e0": "A", "e2": "B", "e9": "C"}, keys, [], 5)
    with pytest.raises(AnswerValidationError, match="not allowed"):
        packing.check_categories({"e0": "Macro", "e2": "Crypto"}, keys, ["Macro"], 5)
    with pytest.raises(AnswerValidationError, match="at most 1"):
        packing.check_categories({"e0": "A", "e2": "B"}, keys, [], 1)


def test_packing_respects_the_token_limit_and_keeps_every_entry() -> None:
    entries = [(i, {"data": "word " * (10 * (i % 4 + 1))}) for i in range(12)]
    groups = packing.pack(entries, limit=60)
    assert sorted(i for g in groups for i in g) == list(range(12))
    for g in groups:
        cost = sum(tokens.count(tokens.entry_text(entries[i][1])) for i in g)
        assert cost <= 60 or len(g) == 1
    big = packing.pack([(0, {"data": "word " * 500})], limit=10)
    assert big == [[0]]  # too big for the limit: an agent of its own


def test_first_layer_names_and_clusters_follow_the_seed() -> None:
    debate = Debate.model_validate(json.loads(EXAMPLE.read_text()))
    chosen = {f"e{i}": "Macro" for i in packing.uncategorized(debate.data)}
    first = packing.first_layer(debate, packing.categorized(debate.data, chosen))
    names = [a.name for a in first.agents]
    assert "NVDA_Company_Agent0" in names and "NVDA_Static0" in names
    assert [c.name for c in first.clusters] == ["Company", "Macro", "Social"]
    assert first.clusters[0].members[-1] == "NVDA_Static0"  # static agents join in turn
    assert "NVDA_Static0" not in first.clusters[0].dynamic
    assert naming.category_head("NVDA", "company news") == "NVDA_CompanyNews_HeadAgent"
    assert naming.cluster_head("NVDA", 1, 2) == "NVDA_Cluster1_Layer2_HeadAgent"
    baseline = packing.first_layer(
        debate.model_copy(update={"mode": DebateMode.ALL_TO_ALL}),
        packing.categorized(debate.data, chosen),
    )
    assert len(baseline.clusters) == 1 and not baseline.clusters[0].synthesize


def _reply(position: str, change: float, confidence: float) -> dict:
    return stock.format_agent_response(
        {
            "justification": "Because the data says so, clearly.",
            "position": position,
            "asset": "NVIDIA",
            "projectedPercentChange": change,
            "timeHorizonHours": 24,
            "confidence": confidence,
        }
    )


def test_stock_example_validates_and_compares() -> None:
    with pytest.raises(AnswerValidationError, match="position"):
        stock.format_agent_response({"position": "Hold"})
    buy, short = _reply("Buy", 3.0, 0.8), _reply("Short", -3.0, 0.8)
    assert stock.compare_responses(buy, buy) == 0
    assert stock.compare_responses(buy, short) > 0.5
    assert stock.draw_final_conclusion(short) == "Short"


def test_the_rule_for_debating_and_the_diversity_clusters() -> None:
    r = {"a": _reply("Buy", 3, 0.9), "b": _reply("Buy", 3, 0.9), "s": _reply("Short", -5, 0.1)}
    compare = stock.compare_responses
    assert clustering.should_debate(["a"], ["a"], r, compare, 0.5) == (
        False,
        "a single agent: nothing to debate",
    )
    assert clustering.should_debate(["a", "b"], ["a", "b"], r, compare, 0.5)[0]
    assert not clustering.should_debate(["a", "b"], ["a"], r, compare, 0.5)[0]  # alike
    assert clustering.should_debate(["a", "s"], ["a"], r, compare, 0.5)[0]  # diverse

    assert clustering.num_clusters(8, 2) == 3 and clustering.num_clusters(3, 1) == 1
    heads = {f"h{i}": _reply(("Buy", "Short")[i % 2], (-1) ** i * 4, 0.5) for i in range(6)}
    groups = clustering.form_clusters(list(heads), heads, compare, 2, "7:L2")
    assert groups == clustering.form_clusters(list(heads), heads, compare, 2, "7:L2")
    assert sorted(a for g in groups for a in g) == sorted(heads) and len(groups) == 2
    for g in groups:  # each cluster mixes Buy and Short: diversity maximized
        assert {heads[a]["position"] for a in g} == {"Buy", "Short"}


def test_final_decision_is_the_majority() -> None:
    r = {"x": _reply("Buy", 1, 1), "y": _reply("Wait", 0, 1), "z": _reply("Buy", 2, 1)}
    result = decision.get_final_decision(r, stock.draw_final_conclusion)
    assert result["conclusion"] == "Buy" and result["counts"] == {"Buy": 2, "Wait": 1}


def test_an_unknown_user_function_names_the_field() -> None:
    with pytest.raises(DocumentError) as error:
        kits.resolve(UserFunctions(compare_responses="nope"), "debates/d")
    assert error.value.field == "userFunctions.compareResponses"


def test_categories_that_name_the_same_agents_are_one() -> None:
    data = [{"category": "company news"}, {"category": "Company-News"}, {}]
    out = packing.categorized(data, {"e2": "COMPANY NEWS"})
    assert [e["category"] for e in out] == ["company news"] * 3
