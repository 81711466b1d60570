"""What the crash tests share: emulators that outlive the runtimes they run, a runtime in a
process of its own (``crash_runtime.py``) started and SIGKILLed, and polling with a bound."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_docs import chat_messages
from experiment_state import participants
from google.cloud import firestore

from emulator import config, processes
from functions import clients
from shared.models import ParticipantStatus

RUNTIME = Path(__file__).with_name("crash_runtime.py")
PROJECT = "demo-dlab"  # the runtime's default project
QUICK = {
    "DLAB_IDLE_AGENT_SECONDS": "2",
    "DLAB_MODEL_OVERRIDE": "SCRIPTED",
    config.PROCESSES_ENV: "0",
}
"""Chats nudged after 2 s of quiet (fast models here). The lease (``DLAB_LEASE_SECONDS``) and the
watchdog's stalled threshold are the production defaults: the lease's renewal, not a test
setting, is what makes recovery prompt. The functions run in the runtime's own process: each
worker process imports the whole stack at every restart, which cost the suite minutes of CPU;
``test_crash`` runs them in worker processes, as ``make up`` does, and kills those too."""
MOVE_BOUND_S = 60.0
"""Issue 27: after a SIGKILL and a restart, every stranded unit moves again within 60 s."""


@contextlib.contextmanager
def standalone_emulators(
    prefix: str,
) -> Iterator[tuple[config.Ports, processes.EmulatorProcess, processes.EmulatorProcess]]:
    """A Firestore and a Pub/Sub emulator on free ports, started here and stopped on exit:
    they outlive (and may be restarted under) the runtimes a test runs against them."""
    functions = processes.free_port()  # the runtimes' receiver, bound by each in turn
    logs = Path(tempfile.mkdtemp(prefix=prefix))
    firestore, pubsub = processes.emulator_pair(0, 0, f"127.0.0.1:{functions}", logs)
    try:
        processes.start_together((firestore, pubsub))
        ports = config.Ports(firestore=firestore.port, pubsub=pubsub.port, functions=functions)
        yield ports, firestore, pubsub
    finally:
        for emulator in (firestore, pubsub):
            emulator.stop()


@pytest.fixture(scope="module")
def emulators() -> Iterator[config.Ports]:
    """Emulators of their own, which outlive every runtime of the test."""
    with standalone_emulators("dlab-crash-") as (ports, _, _):
        yield ports


@pytest.fixture
def in_process(emulators: config.Ports, monkeypatch: pytest.MonkeyPatch) -> Iterator[config.Ports]:
    """This process's environment and cached clients pointed at the test's own emulators, for
    a test that also calls the functions' modules in-process: the worker's earlier tests left
    clients cached for their emulators."""
    for name, value in environment(emulators).items():
        monkeypatch.setenv(name, value)
    clients.reset()
    yield emulators
    clients.reset()


def small_debate(categories: tuple[str, ...], rounds: int, model: dict[str, str]) -> dict[str, Any]:
    """A one-layer debate's document: two leaf agents per category (``tokenLimit`` fits one
    entry per agent), ``rounds`` argument rounds."""
    data = [
        {"note": f"Fact {i}: stations and riders, as measured.", "category": c}
        for i, c in enumerate(c for c in categories for _ in range(2))
    ]
    return {
        "name": "Crash",
        "numRounds": rounds,
        "numLayers": 1,
        "tokenLimit": 30,
        "seed": 1,
        "categories": list(categories),
        "userFunctions": dict.fromkeys(
            ("formatAgentResponse", "drawFinalConclusion", "compareResponses", "prompts"),
            "generic",
        ),
        "model": model,
        "data": data,
    }


def environment(ports: config.Ports) -> dict[str, str]:
    return {
        **os.environ,
        **QUICK,
        "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{ports.firestore}",
        "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{ports.pubsub}",
        "GOOGLE_CLOUD_PROJECT": PROJECT,
    }


def start_runtime(ports: config.Ports) -> subprocess.Popen[str]:
    args = [str(p) for p in (ports.firestore, ports.pubsub, ports.functions)]
    runtime = subprocess.Popen(
        [sys.executable, str(RUNTIME), *args],
        env=environment(ports),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert runtime.stdout is not None
    line = runtime.stdout.readline()
    assert line.strip() == "ready", f"the runtime did not start: {line!r}"
    return runtime


def kill_runtime(runtime: subprocess.Popen[str]) -> None:
    runtime.send_signal(signal.SIGKILL)
    runtime.wait(timeout=30)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``condition`` until it holds; the seconds it took (an assertion past ``timeout``)."""
    t0 = time.monotonic()
    while not condition():
        assert time.monotonic() - t0 < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.25)
    return time.monotonic() - t0


def all_done(db: firestore.Client, e: str) -> bool:
    return all(p.current_status == ParticipantStatus.SUCCESS for p in participants(db, e))


def positions(db: firestore.Client, e: str, chats: list[tuple[str, str]]) -> dict[str, tuple]:
    """Where each agent is; an agent in a chat also by how many messages the chat has."""
    said = {stage: len(chat_messages(db, e, stage_id=stage, cohort=c)) for stage, c in chats}
    return {
        p.private_id: (
            p.current_status,
            p.current_stage_id,
            len(p.timestamps.completed_stages),
            said.get(p.current_stage_id, 0),
        )
        for p in participants(db, e)
    }


def forget_messages(ports: config.Ports) -> None:
    """Delete the project's Pub/Sub topics and subscriptions while no runtime runs, so the next
    runtime makes them anew: a message a killed runtime left unacknowledged would otherwise be
    delivered to the next run, which reuses the same ids (a departure of the last run, say).
    Topics first, as ``test_topic_lost`` explains."""
    host = f"http://127.0.0.1:{ports.pubsub}/v1"

    def call(method: str, url: str) -> dict[str, Any]:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return dict(json.loads(r.read() or b"{}"))

    for kind in ("topics", "subscriptions"):
        for item in call("GET", f"{host}/projects/{PROJECT}/{kind}?pageSize=1000").get(kind, []):
            call("DELETE", f"{host}/{item['name']}")
