"""A runtime of the probe functions for the emulator restart test, in a process of its own (the
services of a process are shared: the test session's runtime would lend it its emulators).

``python tests/integration/restart_runtime.py FS PUBSUB FUNCTIONS`` attaches to emulators that
the test restarts; with no ports it starts emulators of its own, and prints their process ids
(``ready FS_PID PUBSUB_PID FS_HOST PUBSUB_HOST``) so the test can kill one. Then it prints a
line per delivery (``delivered OUTCOME FUNCTION SUBJECT EVENT_ID``) and per notice
(``notice TEXT``). Each line it reads asks for the runtime's idle signal: once
``wait_until_idle`` returns it prints ``idle`` after every delivery so far (``busy TEXT`` if
the runtime did not become idle).
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "tests" / "functions"
sys.path[:0] = [str(ROOT), str(PROBES)]

import probe  # noqa: E402

from emulator import processes  # noqa: E402
from emulator.config import EmulatorOptions, Ports  # noqa: E402
from emulator.runtime import LocalRuntime  # noqa: E402

PROJECT = "demo-restart"


def _options(ports: list[int]) -> EmulatorOptions:
    if not ports:
        return EmulatorOptions()
    firestore, pubsub, functions = ports
    return EmulatorOptions(
        attach=True, ports=Ports(firestore=firestore, pubsub=pubsub, functions=functions)
    )


def _pid(emulator: object) -> int:
    return emulator.pid if isinstance(emulator, processes.EmulatorProcess) and emulator.pid else 0


def _answer_idle(runtime: LocalRuntime, answers: queue.Queue[str]) -> None:
    for _ in sys.stdin:
        try:
            runtime.wait_until_idle(timeout=60)
        except TimeoutError as error:
            answers.put("busy " + str(error).replace("\n", " | "))
        else:
            answers.put("idle")


def main(ports: list[int]) -> None:
    # SIGTERM unwinds the runtime, which stops the emulators it started (restarted ones too)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    runtime = LocalRuntime(
        project=PROJECT,
        registry=probe.PROBE_REGISTRY,
        source=PROBES / "probe_main.py",
        emulators=_options(ports),
    )
    with runtime:
        services = runtime.running_services
        pids = f"{_pid(services.firestore)} {_pid(services.pubsub)}"
        print(f"ready {pids} {runtime.firestore_host} {runtime.pubsub_host}", flush=True)
        answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_answer_idle, args=(runtime, answers), daemon=True).start()
        shown = said = 0
        while True:
            answered = []  # taken before the deliveries are read: those it covers are printed
            while not answers.empty():
                answered.append(answers.get())
            records, notices = runtime.deliveries, runtime.notices
            for r in records[shown:]:
                print(f"delivered {r.outcome} {r.function} {r.subject} {r.event_id}", flush=True)
            for notice in notices[said:]:
                print(f"notice {notice}", flush=True)
            for answer in answered:
                print(answer, flush=True)
            shown, said = len(records), len(notices)
            time.sleep(0.05)


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:4]])
