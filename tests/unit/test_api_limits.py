"""The REST API's counters stay bounded however many callers guess, and the depth of a JSON
body is measured without parsing it."""

from __future__ import annotations

import pytest

from functions.api import limits
from functions.api.http import _depth


def test_the_counters_keep_at_most_max_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ENTRIES", 50)
    table = limits.Windows()
    for i in range(1000):
        table.add(f"guess-{i}", 900)
    assert len(table) == 50
    assert table.add("guess-999", 900, by=0)[0] == 1  # the most recent ones are kept
    assert table.add("guess-0", 900, by=0)[0] == 0


def test_depth_counts_brackets_outside_strings() -> None:
    assert _depth('{"a": [1, {"b": "[[[\\"]]"}]}') == 3
    assert _depth("[" * 5000 + "]" * 5000) == 5000
    assert _depth('"just a string"') == 0
