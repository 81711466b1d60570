"""The runtime with its functions in worker processes (``LocalRuntime(processes=2)``), as ``make
up``, the demos and the benchmarks run it: real experiments reach the same outcomes as on the
session's in-process runtime.

The session's runtime keeps the functions in-process because tests wrap model clients with
closures and patch modules, which cannot reach another process. What the workers must get from
the runtime's process is checked here: the model override set after they started (the
environment forwarded per delivery), chaos model faults (a seed per task, counted back), and
delivery semantics (duplicates, retries, the idle barrier) that stay in the runtime's process.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from chaos_demo import run_demo_under_chaos
from chat_docs import check_no_message_twice
from experiment_state import errors, participants, settle, template
from google.cloud import firestore

from emulator.runtime import LocalRuntime
from shared.models import ParticipantStatus
from shared.templates import template_stages
from tools.load_template import load

PROCESSES = 2


@pytest.fixture(scope="module")
def procs() -> Iterator[LocalRuntime]:
    with LocalRuntime(project="demo-procs", processes=PROCESSES) as runtime:
        yield runtime


@pytest.fixture
def db(procs: LocalRuntime, monkeypatch: pytest.MonkeyPatch) -> Iterator[firestore.Client]:
    """A reset database; the scripted model, set after the workers started (forwarded)."""
    procs.reset()
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time passing
    client = firestore.Client(project=procs.project)
    yield client
    client.close()


def _run_demo(procs: LocalRuntime, db: firestore.Client, agents: int) -> None:
    """The demo template (every stage kind, a group chat with a mediator) to the end: every
    agent through every stage, no error, no chat message twice."""
    tpl = template("demo_all_stages.json")
    result = load(db, tpl, agents=agents, api_type="SCRIPTED", seed=4)
    e = result.experiment_id
    settle(procs, lambda: all(p.timestamps.end_experiment for p in participants(db, e)))
    stage_ids = {s.id for s in template_stages(tpl)}
    for p in participants(db, e):
        assert p.current_status == ParticipantStatus.SUCCESS, p
        assert set(p.timestamps.completed_stages) == stage_ids, p.private_id
    assert errors(db, e) == []
    assert not [d for d in procs.deliveries if d.outcome == "error"]
    chat = next(s["id"] for s in tpl["stageConfigs"] if s["kind"] == "chat")
    check_no_message_twice(db, e, chat, result.cohort_id)


def test_agents_progress_and_chat_with_every_invocation_in_a_worker(
    procs: LocalRuntime, db: firestore.Client
) -> None:
    before = procs.worker_processes
    _run_demo(procs, db, agents=4)
    served = {pid: n - before.get(pid, 0) for pid, n in procs.worker_processes.items()}
    assert len(served) == PROCESSES and os.getpid() not in served, served
    assert all(n > 0 for n in served.values()), f"a worker process ran nothing: {served}"
    ran = [d for d in procs.deliveries if not d.dropped]
    assert sum(served.values()) == len(ran), "every delivery the log shows ran in a worker"


def test_chaos_duplicates_and_model_faults_reach_the_workers(
    procs: LocalRuntime, db: firestore.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = run_demo_under_chaos(procs, db, monkeypatch)
    assert counts["duplicated"] > 0 and counts["retried"] > 0, counts


def test_a_killed_worker_is_replaced_and_the_run_goes_on(
    procs: LocalRuntime, db: firestore.Client
) -> None:
    before = procs.worker_processes
    victim = next(iter(before))
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.2)
    _run_demo(procs, db, agents=2)
    now = procs.worker_processes
    assert victim in now, "the dead worker's tasks stay counted"
    (replacement,) = set(now) - set(before)
    assert now[replacement] > 0, now


def test_a_model_wrapper_cannot_reach_worker_processes(procs: LocalRuntime) -> None:
    with pytest.raises(RuntimeError, match="processes=0"), procs.model_wrapper(lambda c: c):
        pass
