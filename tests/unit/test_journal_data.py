"""The journal as data (tools/journal_data.py): sizes as Firestore counts them, and rows that
keep a malformed entry visible."""

from __future__ import annotations

import datetime

from tools import journal_data


def test_a_document_size_is_firestores_own_example() -> None:
    """cloud.google.com/firestore/docs/storage-size: this task document is 147 bytes."""
    task = {
        "type": "Personal",
        "done": False,
        "priority": 1,
        "description": "Learn Cloud Firestore",
    }
    assert journal_data.stored_size("users/jeff/tasks/my_task_id", task) == 147


def test_sizes_of_nested_values() -> None:
    stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    base = journal_data.stored_size("a/b", {})
    assert base == 2 + 2 + 16 + 32
    # "é" is two UTF-8 bytes; a map counts its keys; an array its values; null is 1 byte
    data = {"t": "é", "m": {"k": 1.5}, "l": [stamp, None, True]}
    assert journal_data.stored_size("a/b", data) == base + (2 + 3) + (2 + 2 + 8) + (2 + 8 + 1 + 1)


def test_a_malformed_entry_still_makes_a_row() -> None:
    entry = {"key": "k1", "text": 42, "promptTokens": "many", "toolCalls": [{"name": "search"}]}
    (row,) = journal_data.rows("experiments/e1", [entry])
    assert list(row) == list(journal_data.COLUMNS)
    assert (row["run"], row["key"], row["text"], row["prompt_tokens"]) == (
        "experiments/e1",
        "k1",
        "",
        0,
    )
    assert row["tool_calls"] == '[{"name": "search"}]'
