"""What the crash tests share: emulators that outlive the runtimes they run, a runtime in a
process of its own (``crash_runtime.py``) started and SIGKILLed, and polling with a bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from emulator import config, processes

RUNTIME = Path(__file__).with_name("crash_runtime.py")
PROJECT = "demo-dlab"  # the runtime's default project
QUICK = {"DLAB_IDLE_AGENT_SECONDS": "2", "DLAB_MODEL_OVERRIDE": "SCRIPTED"}
"""Chats nudged after 2 s of quiet (fast models here). The lease (``DLAB_LEASE_SECONDS``) and the
watchdog's stalled threshold are the production defaults: the lease's renewal, not a test
setting, is what makes recovery prompt."""
MOVE_BOUND_S = 60.0
"""Issue 27: after a SIGKILL and a restart, every stranded unit moves again within 60 s."""


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
