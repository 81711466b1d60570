"""The debate's pure parts: offline token counts, categorization checks, packing by the token
budget, the seed's naming, the rule for debating, cluster formation and the final decision."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from shared.debate import clustering, decision, kits, loading, naming, packing
from shared.debate import stock_trading as stock
from shared.debate.models import Debate, DebateMode, UserFunctions
from shared.llm import scripted
from shared.models import DocumentError
from shared.stages import AnswerValidationError

EXAMPLE = Path(__file__).resolve().parents[2] / "templates" / "debates" / "stock_trading.json"
GENERIC = EXAMPLE.with_name("generic.json")


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
    names = {"c1": "Macro", "c2": "Social"}
    with pytest.raises(AnswerValidationError, match="missing: \\['e2'\\]"):
        packing.check_categories({"names": names, "e0": "c1"}, keys, [], 5)
    with pytest.raises(AnswerValidationError, match="invented: \\['e9'\\]"):
        packing.check_categories({"names": names, "e0": "c1", "e2": "c1", "e9": "c2"}, keys, [], 5)
    with pytest.raises(AnswerValidationError, match="not allowed"):
        packing.check_categories({"e0": "Macro", "e2": "Crypto"}, keys, ["Macro"], 5)
    with pytest.raises(AnswerValidationError, match="slots not allowed"):
        packing.check_categories({"names": names, "e0": "c1", "e2": "c2"}, keys, [], 1)
    with pytest.raises(AnswerValidationError, match="non-empty"):
        packing.check_categories({"names": {"c1": ""}, "e0": "c1", "e2": "c1"}, keys, [], 5)
    reply = {"names": names, "e0": "c2", "e2": "c2"}
    assert packing.check_categories(reply, keys, [], 5) == {"e0": "Social", "e2": "Social"}


def test_a_schema_valid_categorization_is_a_valid_one() -> None:
    """The scripted model answers any schema validly; without ``categories`` its answer used to
    name one category per entry and fail "at most N" on every attempt."""
    keys = [f"e{i}" for i in range(20)]
    schema = packing.category_schema(keys, [], 3)
    for seed in range(20):
        reply = scripted.generate_value(random.Random(seed), schema)
        chosen = packing.check_categories(reply, keys, [], 3)
        assert set(chosen) == set(keys) and len(set(chosen.values())) <= 3


def test_packing_respects_the_token_limit_and_keeps_every_entry() -> None:
    entries = [{"data": "word " * (10 * (i % 4 + 1))} for i in range(12)]
    groups = packing.pack(entries, limit=60)
    assert sorted(i for g in groups for i in g) == list(range(12))
    for g in groups:
        assert sum(packing.cost(entries[i]) for i in g) <= 60


NEWS = "NVIDIA guides next-quarter data-center revenue 12% above consensus on demand."


def _report(sentences: int) -> str:
    return " ".join(
        f"Item {i}: orders rose {i * 7 % 90}% in region {i * 13 % 40}." for i in range(sentences)
    )


def _debate(data: list[dict], limit: int = 120, prompts: str = "stock_trading") -> Debate:
    names = ("formatAgentResponse", "drawFinalConclusion", "compareResponses", "prompts")
    return Debate.model_validate(
        {
            "name": "D",
            "tokenLimit": limit,
            "data": data,
            "userFunctions": dict.fromkeys(names, prompts),
        }
    )


def _entry(i: int, text: str) -> dict:
    return {
        "source": "Reuters",
        "date": f"2025-05-0{i % 9 + 1}",
        "category": "Company",
        "data": text,
    }


def test_an_entry_over_the_limit_is_cut_into_pieces_no_agent_holds_more() -> None:
    """Issue 28 row 9: a leaf agent held 36,942 tokens against a limit of 120."""
    data = [_entry(0, NEWS), _entry(1, _report(40)), _entry(2, NEWS)]
    debate = _debate(data)
    assert packing.cost(data[1]) > 2 * debate.token_limit
    first = packing.first_layer(debate, data, "data")
    leaves = [a for a in first.agents if a.role == "leaf"]
    for agent in leaves:
        assert agent.data_tokens <= debate.token_limit, agent.name
        assert sum(packing.cost(e) for e in agent.entries) == agent.data_tokens
    cut = [e for a in leaves for e in a.entries if e.get("part")]
    assert len(cut) >= 3 and [e["part"] for e in cut][-1] == f"{len(cut)}/{len(cut)}"
    assert " ".join(e["data"] for e in cut).split() == data[1]["data"].split()  # nothing lost
    assert all(e["source"] == "Reuters" for e in cut)  # each piece keeps its metadata
    assert sorted(i for a in leaves for i in a.entry_indexes) == [0, *[1] * len(cut), 2]
    kept = [e for a in leaves for e in a.entries if not e.get("part")]
    assert kept == [data[0], data[2]]  # entries that fit are not touched


def test_a_text_without_spaces_is_cut_too_and_every_piece_fits() -> None:
    entry = {"note": "x" * 3000, "category": "Cost"}  # a kit that names no field: the longest
    out = packing.pieces(4, entry, None, limit=200)
    assert 1 < len(out) <= packing.MAX_PIECES
    assert "".join(p["note"] for p in out) == entry["note"]
    assert all(packing.cost(p) <= 200 and p["category"] == "Cost" for p in out)


def test_an_entry_too_large_for_its_pieces_is_refused_naming_its_field() -> None:
    """200 KB against 120 tokens would take hundreds of agents: refused, not packed."""
    data = [_entry(0, NEWS), _entry(1, NEWS), _entry(2, "x " * 100_000)]
    with pytest.raises(DocumentError) as error:
        packing.check(_debate(data), "data", "debates/d")
    assert (error.value.document, error.value.field) == ("debates/d", "data[2].data")
    assert "tokenLimit is 120" in error.value.reason
    with pytest.raises(packing.Refused):
        packing.first_layer(_debate(data), data, "data")
    packing.check(
        _debate(data).model_copy(update={"mode": DebateMode.SELF_CONSISTENCY}), "data", "d"
    )
    metadata = {"source": "s" * 2000, "data": "short"}  # no room left for any text
    with pytest.raises(packing.Refused, match="tokenLimit"):
        packing.pieces(0, metadata, "data", limit=120)


def test_an_entry_without_data_is_refused_at_load_naming_document_and_field() -> None:
    """Issue 28 row 9: an entry without ``data`` was accepted silently."""
    stocks = json.loads(EXAMPLE.read_text())
    del stocks["data"][3]["data"]
    with pytest.raises(DocumentError) as error:
        loading.load(stocks, "debates/d")
    assert (error.value.document, error.value.field) == ("debates/d", "data[3].data")
    stocks["data"][3]["data"] = "  "
    with pytest.raises(DocumentError, match="empty"):
        loading.load(stocks, "debates/d")
    generic = json.loads(GENERIC.read_text())
    generic["data"][1] = {"category": "Cost"}  # the generic kit reads any field: none here
    generic["data"][4] = {}
    with pytest.raises(DocumentError) as error:
        loading.load(generic, "debates/g")
    assert error.value.field == "data[1]" and "1 more: data[4]" in error.value.reason
    assert loading.load(json.loads(EXAMPLE.read_text()), "debates/d").name == "NVDA"
    assert loading.load(json.loads(GENERIC.read_text()), "debates/g").name == "CityBikes"


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

    heads = {f"h{i}": _reply(("Buy", "Short")[i % 2], (-1) ** i * 4, 0.5) for i in range(6)}
    table = clustering.differences(list(heads), heads, compare)
    assert len(table) == 15 and all(a < b for a, b in table)  # once per pair of 6
    assert table[("h0", "h1")] == compare(heads["h0"], heads["h1"])
    groups = clustering.form_clusters(list(heads), table, 2, "7:L2")
    assert groups == clustering.form_clusters(list(heads), table, 2, "7:L2")
    assert sorted(a for g in groups for a in g) == sorted(heads) and len(groups) == 2
    for g in groups:  # each cluster mixes Buy and Short: diversity maximized
        assert {heads[a]["position"] for a in g} == {"Buy", "Short"}


def test_the_cluster_count_per_layer_is_ceil_of_c_prev_over_rounds_plus_one() -> None:
    """The seed bases C_i on C_prev and num_rounds (docs/DEBATE.md: ceil(C_prev / (r + 1)));
    the count no longer depends on the layers left, so a second layer need not be one cluster."""
    cases = {(8, 2): 3, (3, 2): 1, (8, 1): 4, (4, 1): 2, (2, 1): 1, (12, 3): 3, (13, 3): 4}
    for (previous, rounds), expected in cases.items():
        assert clustering.num_clusters(previous, rounds) == expected, (previous, rounds)
    assert clustering.num_clusters(5, 0) == 5  # no rounds: nothing to merge over
    assert clustering.num_clusters(1, 4) == 1 and clustering.num_clusters(0, 2) == 1
    layers, count = [], 32  # 32 categories, 1 round: 16, 8, 4, 2, 1
    while count > 1:
        count = clustering.num_clusters(count, 1)
        layers.append(count)
    assert layers == [16, 8, 4, 2, 1]


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


def test_the_cli_refuses_an_entry_without_data_before_writing_anything(tmp_path, capsys) -> None:
    from tools.debate.__main__ import main

    stocks = json.loads(EXAMPLE.read_text())
    del stocks["data"][3]["data"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(stocks))
    assert main([str(bad), "--id", "d", "--project", "no-such-project"]) == 2
    assert "refused (debates/d · data[3].data): missing" in capsys.readouterr().err
