from __future__ import annotations

import threading

import pytest

from functions import memo
from functions.side_by_side import all_at_once, side_by_side


def test_both_run_at_once_and_come_back_in_order():
    both_started = threading.Barrier(2, timeout=5)  # neither returns until the other started

    def first() -> str:
        both_started.wait()
        return "first"

    def second() -> int:
        both_started.wait()
        return 2

    assert side_by_side(first, second) == ("first", 2)


def test_the_second_sees_and_fills_the_invocations_memo():
    with memo.invocation():
        memo.put("stage", "kept")
        _, seen = side_by_side(lambda: None, lambda: memo.cached("stage", lambda: "read again"))
        assert seen == "kept"
        side_by_side(lambda: None, lambda: memo.put("history", ["m1"]))
        assert memo.cached("history", lambda: ["read again"]) == ["m1"]


def test_an_exception_of_the_second_is_raised():
    def broken() -> None:
        raise ValueError("no such document")

    with pytest.raises(ValueError, match="no such document"):
        side_by_side(lambda: 1, broken)


def test_all_at_once_keeps_the_order_of_the_calls():
    all_started = threading.Barrier(3, timeout=5)

    def read(name: str) -> str:
        all_started.wait()
        return name

    assert all_at_once([lambda: read("a"), lambda: read("b"), lambda: read("c")]) == ["a", "b", "c"]
    assert all_at_once([]) == []


def test_a_pool_thread_that_asks_for_more_runs_them_itself():
    """Every pool thread waiting on reads queued behind it would never end: from a pool thread,
    the reads run where they are."""

    def nested() -> list[int]:
        return all_at_once([lambda: 1, lambda: 2])

    calls = [nested for _ in range(20)]  # more than the pool has threads
    results: list[list[list[int]]] = []
    waiting = threading.Thread(target=lambda: results.append(all_at_once(calls)), daemon=True)
    waiting.start()
    waiting.join(timeout=10)
    assert results == [[[1, 2]] * 20]
