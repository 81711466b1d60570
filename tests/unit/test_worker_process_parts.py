"""The worker processes' pure parts: the worker count, what a task carries, the environment a
worker applies, and chaos fault plans forked per task (the pool itself runs in
tests/integration/test_worker_processes.py)."""

from __future__ import annotations

import argparse
import os
import pickle

import pytest

from emulator import config, workers
from emulator.model_faults import FaultPlan, FaultSpec


def test_default_processes_one_per_core_unless_the_variable_says() -> None:
    cores = os.cpu_count() or 1
    assert config.default_processes({}) == (cores if cores > 1 else 0)
    assert config.default_processes({config.PROCESSES_ENV: "0"}) == 0
    assert config.default_processes({config.PROCESSES_ENV: " 3 "}) == 3
    for bad in ("-1", "two"):
        with pytest.raises(ValueError, match=config.PROCESSES_ENV):
            config.default_processes({config.PROCESSES_ENV: bad})


def test_the_processes_flag_rejects_a_negative_count() -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    config.add_processes_argument(parser)
    assert parser.parse_args(["--processes", "4"]).processes == 4
    with pytest.raises(argparse.ArgumentError):
        parser.parse_args(["--processes", "-2"])


def test_a_task_carries_the_settings_and_provider_variables_only() -> None:
    env = {
        "DLAB_MODEL_OVERRIDE": "SCRIPTED",
        "OPENAI_BASE_URL": "http://fake",
        "GOOGLE_API_KEY": "k",
        "GOOGLE_CLOUD_PROJECT": "p",
        "HOME": "/root",
    }
    assert workers.forwarded_env(env) == {
        "DLAB_MODEL_OVERRIDE": "SCRIPTED",
        "OPENAI_BASE_URL": "http://fake",
        "GOOGLE_API_KEY": "k",
    }


def test_a_worker_sets_and_removes_forwarded_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_GONE", "1")
    monkeypatch.setenv("DLAB_KEPT", "old")
    monkeypatch.setenv("UNRELATED", "stays")
    monkeypatch.delenv("DLAB_NEW", raising=False)
    workers._Environment().apply({"DLAB_KEPT": "new", "DLAB_NEW": "2"})
    assert "DLAB_GONE" not in os.environ
    assert os.environ["DLAB_KEPT"] == "new" and os.environ["DLAB_NEW"] == "2"
    assert os.environ["UNRELATED"] == "stays"


def test_a_task_with_a_binary_body_crosses_the_pipe_intact() -> None:
    body = bytes(range(256))
    task = workers.Task(id=1, function="f", headers={"ce-id": "x"}, body=body, env={}, faults=None)
    assert pickle.loads(pickle.dumps(task)) == task


def test_forked_fault_plans_are_seeded_from_the_runtime_plan_and_counted_back() -> None:
    specs = [FaultPlan(0.5, seed=3).fork() for _ in range(2)]
    assert specs[0] == specs[1] and specs[0].rate == 0.5
    parent = FaultPlan(0.5, seed=3)
    first, second = parent.fork(), parent.fork()
    assert first.seed != second.seed, "each task draws its own faults"
    child = FaultPlan.from_spec(FaultSpec(rate=1.0, seed=first.seed))
    for _ in range(5):
        child.draw()
    assert sum(child.injected.values()) == 5
    parent.add(child.injected)
    parent.add({"outage": 2})
    assert sum(parent.injected.values()) == 7
