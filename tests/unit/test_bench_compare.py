"""The regression gate's pure parts (``bench.compare``): which arguments reach the runs, which
figures of a run's JSON are compared, and the ratios and spreads of the pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import compare


def test_the_gates_own_options_do_not_reach_the_runs() -> None:
    argv = ["--compare", "abc", "--only", "transitions", "--pairs=4", "--out", "x.md", "--quick"]
    assert compare.run_args(argv) == ["--only", "transitions", "--quick"]


def _run(wall: float, calls: float) -> dict[str, object]:
    return {
        "machine": {"cores": 2},
        "sections": {
            "transitions": {
                "runs": [
                    {
                        "agents": 10,
                        "processes": 2,
                        "profiled": False,
                        "wallSeconds": wall,
                        "modelCalls": calls,
                        "loadAverage": [3.0, 2.0, 1.0],
                        "stageTimes": {"tos": {"wallSeconds": 1.0}},
                        "cpu": {"wallSeconds": 9.0},
                    }
                ]
            },
            "latency": {"scripted": {"messageToReplyMs": {"p50": 80.0, "n": 40}}},
        },
    }


def test_the_headline_figures_are_found_by_path_and_the_detail_is_left_out() -> None:
    assert compare.figures(_run(6.0, 40)) == {
        "transitions.runs[agents=10, processes=2].wallSeconds": 6.0,
        "transitions.runs[agents=10, processes=2].modelCalls": 40.0,
        "latency.scripted.messageToReplyMs.p50": 80.0,
    }


def test_each_figure_gets_the_median_ratio_of_the_pairs_and_its_spread() -> None:
    ref = compare.Side("ref", Path("."), [compare.figures(_run(w, 40)) for w in (10, 12, 8)])
    new = compare.Side("new", Path("."), [compare.figures(_run(w, 40)) for w in (5, 9, 6)])
    ref.loads, new.loads = [1.0, 2.0, 3.0], [1.5, 2.5, 3.5]
    rows = {row.figure: row for row in compare.compare(ref, new)}
    wall = rows["transitions.runs[agents=10, processes=2].wallSeconds"]
    assert (wall.ref, wall.new) == (10, 6)
    assert wall.ratio == pytest.approx(0.75)  # pairs 0.5, 0.75, 0.75
    assert (wall.low, wall.high) == (pytest.approx(0.5), pytest.approx(0.75))
    calls = rows["transitions.runs[agents=10, processes=2].modelCalls"]
    assert calls.ratio == calls.low == calls.high == 1.0
    text = compare.table(list(rows.values()), ref, new)
    row = "| transitions.runs[agents=10, processes=2].wallSeconds | 10 | 6 | 0.75 | 0.50-0.75 |"
    assert row in text
    assert "3 pairs" in text and "1.0-3.5" in text


def test_a_figure_missing_from_one_run_is_not_compared() -> None:
    ref = compare.Side("ref", Path("."), [compare.figures(_run(10, 40))])
    partial = _run(5, 40)
    partial["sections"] = {"transitions": partial["sections"]["transitions"]}  # type: ignore[index]
    new = compare.Side("new", Path("."), [compare.figures(partial)])
    figures = {row.figure for row in compare.compare(ref, new)}
    assert "latency.scripted.messageToReplyMs.p50" not in figures
    assert len(figures) == 2
