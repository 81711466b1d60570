"""The invocation's reads: values kept per invocation (and, when enabled, per instance for a
few seconds), documents read ahead for one read, and reads made at the same time."""

from __future__ import annotations

import contextlib
import itertools
import threading

import pytest

from functions import reads


def _loader():
    counter = itertools.count(1)
    return lambda: next(counter)


def test_outside_an_invocation_every_read_goes_to_firestore():
    load = _loader()
    assert [reads.once("k", load) for _ in range(3)] == [1, 2, 3]


def test_within_an_invocation_a_document_is_read_once_and_put_replaces_it():
    load = _loader()
    with reads.invocation():
        assert [reads.once("k", load) for _ in range(3)] == [1, 1, 1]
        reads.note("k", 42)
        assert reads.once("k", load) == 42
    with reads.invocation():
        assert reads.once("k", load) == 2  # nothing kept across invocations


def test_an_exception_is_not_kept():
    calls = []

    def failing():
        calls.append(1)
        raise ValueError("missing")

    with reads.invocation():
        for _ in range(2):
            with contextlib.suppress(ValueError):
                reads.once("k", failing)
    assert len(calls) == 2


def test_the_instance_cache_is_off_by_default(monkeypatch):
    monkeypatch.delenv("DLAB_CONFIG_CACHE_SECONDS", raising=False)
    load = _loader()
    values = []
    for _ in range(2):
        with reads.invocation():
            values.append(reads.current().config("experiments/e", load))
    assert values == [1, 2]


def test_the_instance_cache_keeps_until_the_document_is_written_or_reads_must_be_fresh(
    monkeypatch,
):
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "60")
    load = _loader()
    path = "experiments/e-memo/stages/s1"
    reads.drop_config(path)
    with reads.invocation():
        assert reads.current().config(path, load) == 1
    with reads.invocation():
        assert reads.current().config(path, load) == 1  # kept across invocations
        with reads.fresh():
            assert reads.current().config(path, load) == 2  # a blocked agent reads fresh
    reads.drop_config(path)  # this instance saw the stage written
    with reads.invocation():
        assert reads.current().config(path, load) == 3
    with reads.invocation(), reads.fresh(False):
        assert reads.current().config(path, load) == 3  # fresh(False) changes nothing
    reads.drop_config(path)


def test_a_document_read_ahead_answers_one_read_only():
    """``take``: a snapshot read ahead (``reads.ahead``) serves the read it was read for; a
    later read of the same document (after a write, say) goes to Firestore."""
    with reads.invocation() as kept:
        kept._ahead["a/b"] = "snapshot"  # as ``batch`` leaves it
        assert reads.current().take("a/b") == "snapshot"
        assert reads.current().take("a/b") is None
    assert reads.current().take("a/b") is None  # outside an invocation: nothing kept
    assert not reads.current().keeping


def test_holds_says_whether_config_would_read(monkeypatch):
    path = "experiments/e-kept/stages/s1"
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "0")
    with reads.invocation():
        assert not reads.current().holds(path)
        reads.current().config(path, lambda: 1)
        assert reads.current().holds(path)  # within the invocation
    with reads.invocation():
        assert not reads.current().holds(path)  # the instance cache is off
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "60")
    reads.drop_config(path)
    with reads.invocation():
        reads.current().config(path, lambda: 1)
    with reads.invocation():
        assert reads.current().holds(path)
        with reads.fresh():
            assert not reads.current().holds(path)  # a blocked agent reads fresh
    reads.drop_config(path)
    with reads.invocation():
        assert not reads.current().holds(path)


def test_both_run_at_once_and_come_back_in_order():
    both_started = threading.Barrier(2, timeout=5)  # neither returns until the other started

    def first() -> str:
        both_started.wait()
        return "first"

    def second() -> int:
        both_started.wait()
        return 2

    assert reads.together(first, second) == ("first", 2)


def test_the_second_sees_and_fills_the_invocations_reads():
    with reads.invocation():
        reads.note("stage", "kept")
        _, seen = reads.together(lambda: None, lambda: reads.once("stage", lambda: "read again"))
        assert seen == "kept"
        reads.together(lambda: None, lambda: reads.note("history", ["m1"]))
        assert reads.once("history", lambda: ["read again"]) == ["m1"]


def test_an_exception_of_the_second_is_raised():
    def broken() -> None:
        raise ValueError("no such document")

    with pytest.raises(ValueError, match="no such document"):
        reads.together(lambda: 1, broken)


def test_all_at_once_keeps_the_order_of_the_calls():
    all_started = threading.Barrier(3, timeout=5)

    def read(name: str) -> str:
        all_started.wait()
        return name

    assert reads.all_together([lambda: read("a"), lambda: read("b"), lambda: read("c")]) == [
        "a",
        "b",
        "c",
    ]
    assert reads.all_together([]) == []


def test_reads_nested_in_pool_threads_never_wait_for_ever():
    """A pool thread waiting on reads queued behind it in its own pool could wait for ever:
    reads started from the first pool go to the second, and from the second run where they
    are, however many ask at once."""

    def innermost() -> list[int]:
        return reads.all_together([lambda: 1, lambda: 2])

    def nested() -> list[list[int]]:
        return reads.all_together([innermost, innermost])

    calls = [nested for _ in range(reads.POOL_THREADS + 8)]  # more than a pool has threads
    results: list[list[list[list[int]]]] = []
    waiting = threading.Thread(
        target=lambda: results.append(reads.all_together(calls)), daemon=True
    )
    waiting.start()
    waiting.join(timeout=10)
    assert results == [[[[1, 2], [1, 2]]] * len(calls)]


def test_a_read_started_beside_another_still_reads_its_parts_at_once():
    """A read started beside an election (``reads.start``) that reads three things at once
    reads them at once, not one after the other, though it runs on a pool thread."""
    all_started = threading.Barrier(3, timeout=5)

    def part(name: str) -> str:
        all_started.wait()
        return name

    later = reads.start(
        lambda: reads.three(lambda: part("a"), lambda: part("b"), lambda: part("c"))
    )
    assert later() == ("a", "b", "c")
