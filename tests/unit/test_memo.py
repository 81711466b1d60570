"""Reads kept per invocation, and (when enabled) per instance for a few seconds."""

from __future__ import annotations

import contextlib
import itertools

from functions import memo


def _loader():
    counter = itertools.count(1)
    return lambda: next(counter)


def test_outside_an_invocation_every_read_goes_to_firestore():
    load = _loader()
    assert [memo.cached("k", load) for _ in range(3)] == [1, 2, 3]


def test_within_an_invocation_a_document_is_read_once_and_put_replaces_it():
    load = _loader()
    with memo.invocation():
        assert [memo.cached("k", load) for _ in range(3)] == [1, 1, 1]
        memo.put("k", 42)
        assert memo.cached("k", load) == 42
    with memo.invocation():
        assert memo.cached("k", load) == 2  # nothing kept across invocations


def test_an_exception_is_not_kept():
    calls = []

    def failing():
        calls.append(1)
        raise ValueError("missing")

    with memo.invocation():
        for _ in range(2):
            with contextlib.suppress(ValueError):
                memo.cached("k", failing)
    assert len(calls) == 2


def test_the_instance_cache_is_off_by_default(monkeypatch):
    monkeypatch.delenv("DLAB_CONFIG_CACHE_SECONDS", raising=False)
    load = _loader()
    values = []
    for _ in range(2):
        with memo.invocation():
            values.append(memo.shared("k", "experiments/e", load))
    assert values == [1, 2]


def test_the_instance_cache_keeps_until_the_document_is_written_or_reads_must_be_fresh(
    monkeypatch,
):
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "60")
    load = _loader()
    path = "experiments/e-memo/stages/s1"
    memo.drop_shared(path)
    with memo.invocation():
        assert memo.shared("stage", path, load) == 1
    with memo.invocation():
        assert memo.shared("stage", path, load) == 1  # kept across invocations
        with memo.fresh():
            assert memo.shared("stage-fresh", path, load) == 2  # a blocked agent reads fresh
    memo.drop_shared(path)  # this instance saw the stage written
    with memo.invocation():
        assert memo.shared("stage", path, load) == 3
    with memo.invocation(), memo.fresh(False):
        assert memo.shared("stage", path, load) == 3  # fresh(False) changes nothing
    memo.drop_shared(path)


def test_a_document_read_ahead_answers_one_read_only():
    """``take``: a snapshot read ahead (``store.prefetch``) serves the read it was read for; a
    later read of the same document (after a write, say) goes to Firestore."""
    with memo.invocation():
        memo.put(("prefetched", "a/b"), "snapshot")
        assert memo.take(("prefetched", "a/b")) == "snapshot"
        assert memo.take(("prefetched", "a/b")) is None
    assert memo.take(("prefetched", "a/b")) is None  # outside an invocation: nothing kept
    assert not memo.active()


def test_kept_says_whether_shared_would_read(monkeypatch):
    path = "experiments/e-kept/stages/s1"
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "0")
    with memo.invocation():
        assert not memo.kept("stage", path)
        memo.shared("stage", path, lambda: 1)
        assert memo.kept("stage", path)  # within the invocation
    with memo.invocation():
        assert not memo.kept("stage", path)  # the instance cache is off
    monkeypatch.setenv("DLAB_CONFIG_CACHE_SECONDS", "60")
    memo.drop_shared(path)
    with memo.invocation():
        memo.shared("stage", path, lambda: 1)
    with memo.invocation():
        assert memo.kept("stage", path)
        with memo.fresh():
            assert not memo.kept("stage", path)  # a blocked agent reads fresh
    memo.drop_shared(path)
    with memo.invocation():
        assert not memo.kept("stage", path)
