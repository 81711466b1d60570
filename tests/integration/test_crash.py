"""The runtime killed (SIGKILL) at random moments of a 5-agent run of the demo experiment (every
stage kind, a group chat with a mediator and two threads), the emulators kept running: after
the last restart every agent reaches SUCCESS with no touch, and no answer or message is doubled.

A killed runtime loses the events it had not handled and leaves leases and locks behind, as a
function instance dying mid-move would (production re-delivers the events; locally nothing
does). The watchdog, ticked every second by the runtime, drives the agents on. Kills:
``DLAB_CRASH_KILLS`` (default 3; the closing figures used 10), seed: ``DLAB_CRASH_SEED``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_docs import check_no_message_twice
from experiment_state import participants, template
from google.cloud import firestore

from emulator import config, processes
from functions.agents.progression import MOVE_LEASE_ENV
from functions.chat.watchdog import IDLE_ENV, STALLED_ENV
from shared.llm.providers import MODEL_OVERRIDE_ENV
from shared.models import ParticipantStatus
from tools.load_template import load

AGENTS = 5
RUNTIME = Path(__file__).with_name("crash_runtime.py")
PROJECT = "demo-dlab"  # the runtime's default project
QUICK = {STALLED_ENV: "3", IDLE_ENV: "2", MOVE_LEASE_ENV: "15", MODEL_OVERRIDE_ENV: "SCRIPTED"}
"""Recovery within seconds: fast models here, so short thresholds are safe."""


@pytest.fixture(scope="module")
def emulators() -> Iterator[config.Ports]:
    """Emulators of their own, which outlive every runtime of the test."""
    ports = config.resolve(config.Ports())[0]
    logs = Path(tempfile.mkdtemp(prefix="dlab-crash-"))
    running = [
        processes.EmulatorProcess(
            "firestore-emulator",
            processes.firestore_command(ports.firestore, f"127.0.0.1:{ports.functions}"),
            ports.firestore,
            logs / "firestore.log",
        ),
        processes.EmulatorProcess(
            "pubsub-emulator", processes.pubsub_command(ports.pubsub), ports.pubsub, logs / "ps.log"
        ),
    ]
    try:
        for emulator in running:
            emulator.start()
        for emulator in running:
            emulator.wait_ready()
        yield ports
    finally:
        for emulator in running:
            emulator.stop()


def _environment(ports: config.Ports) -> dict[str, str]:
    return {
        **os.environ,
        **QUICK,
        "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{ports.firestore}",
        "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{ports.pubsub}",
        "GOOGLE_CLOUD_PROJECT": PROJECT,
    }


def _start(ports: config.Ports) -> subprocess.Popen[str]:
    args = [str(p) for p in (ports.firestore, ports.pubsub, ports.functions)]
    runtime = subprocess.Popen(
        [sys.executable, str(RUNTIME), *args],
        env=_environment(ports),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert runtime.stdout is not None
    line = runtime.stdout.readline()
    assert line.strip() == "ready", f"the runtime did not start: {line!r}"
    return runtime


def _kill(runtime: subprocess.Popen[str]) -> None:
    runtime.send_signal(signal.SIGKILL)
    runtime.wait(timeout=30)


def _all_done(db: firestore.Client, e: str) -> bool:
    return all(p.current_status == ParticipantStatus.SUCCESS for p in participants(db, e))


def test_killed_runtimes_lose_no_agent_and_double_nothing(emulators, monkeypatch):
    kills = int(os.environ.get("DLAB_CRASH_KILLS", "3"))
    rng = random.Random(int(os.environ.get("DLAB_CRASH_SEED", "7")))
    for name, value in _environment(emulators).items():
        monkeypatch.setenv(name, value)
    db = firestore.Client(project=PROJECT)
    runtime = _start(emulators)
    demo = template("demo_all_stages.json")
    loaded = load(db, demo, agents=AGENTS, api_type="SCRIPTED", seed=0)
    e = loaded.experiment_id
    for _ in range(kills):
        time.sleep(rng.uniform(0.3, 4.0))
        _kill(runtime)
        runtime = _start(emulators)
    deadline = time.monotonic() + 300
    try:
        while not _all_done(db, e) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        _kill(runtime)
    stuck = {p.private_id: p.current_stage_id for p in participants(db, e) if not _all_done(db, e)}
    assert _all_done(db, e), stuck
    stage_ids = demo["experiment"]["stageIds"]
    for p in participants(db, e):
        assert sorted(p.timestamps.completed_stages) == sorted(stage_ids), p.private_id
    for stage in demo["stageConfigs"]:
        if stage["kind"] == "chat":
            check_no_message_twice(db, e, stage_id=stage["id"], cohort=loaded.cohort_id)
