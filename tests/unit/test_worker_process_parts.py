"""The worker processes' pure parts: the worker count, what a task carries, the environment a
worker applies, chaos fault plans forked per task, and the pool's start on a probe source (no
emulator; the pool running real functions is in tests/integration/test_worker_processes.py)."""

from __future__ import annotations

import argparse
import logging
import os
import pickle
from pathlib import Path

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


PROBE = """
import time
from pathlib import Path

while not Path({gate!r}).exists():  # loading lasts until the test opens the gate
    time.sleep(0.05)


def probe(cloud_event):
    pass
"""


def test_the_pool_waits_for_slow_workers_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No start deadline: a worker still loading is waited for, with a line of progress."""
    gate = tmp_path / "gate"
    source = tmp_path / "main.py"
    source.write_text(PROBE.format(gate=str(gate)))
    setup = workers.Setup(env={}, functions=["probe"], source=str(source), threads=1)
    pool = workers.WorkerPool(1, setup)

    def open_gate_once_reported(record: logging.LogRecord) -> bool:
        if "0 of 1 ready" in record.getMessage():
            gate.touch()
        return True

    logger = logging.getLogger(workers.__name__)
    logger.addFilter(open_gate_once_reported)
    try:
        with caplog.at_level(logging.INFO, logger=workers.__name__):
            pool.start(progress_every=0.2)
    finally:
        logger.removeFilter(open_gate_once_reported)
        pool.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert any("0 of 1 ready after" in m and "still loading" in m for m in messages), messages
    assert any("1 worker processes ready" in m for m in messages), messages


def test_the_pool_start_fails_when_a_worker_dies_before_it_is_ready(tmp_path: Path) -> None:
    source = tmp_path / "main.py"
    source.write_text("raise SystemExit(3)\n")
    setup = workers.Setup(env={}, functions=["probe"], source=str(source), threads=1)
    pool = workers.WorkerPool(1, setup)
    try:
        with pytest.raises(workers.WorkerDied, match="exit code 3"):
            pool.start(progress_every=0.2)
    finally:
        pool.stop()
