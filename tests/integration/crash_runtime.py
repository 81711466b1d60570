"""A local runtime attached to emulators that outlive it, run as its own process so the crash test
can kill it with SIGKILL: ``python tests/integration/crash_runtime.py FS PUBSUB FUNCTIONS``. Prints
``ready`` once it delivers events, then ``notice TEXT`` for each live-log line about its emulators
(``test_emulator_restart_systems`` restarts them). Its functions run in worker processes as ``make
up`` runs them when ``DLAB_WORKER_PROCESSES`` asks for them (``test_crash`` does), so a kill also
tests that the workers die with the runtime instead of finishing its moves as orphans.
``DLAB_CRASH_MODE=chaos``: chaos delivery (``emulator.chaos``, settings from the environment)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from emulator.chaos import ChaosSettings
from emulator.config import EmulatorOptions, Ports, default_processes
from emulator.runtime import LocalRuntime


def main(firestore: int, pubsub: int, functions: int) -> None:
    ports = Ports(firestore=firestore, pubsub=pubsub, functions=functions)
    options = EmulatorOptions(attach=True, ports=ports)
    mode = os.environ.get("DLAB_CRASH_MODE") or "concurrent"
    chaos = ChaosSettings.from_env() if mode == "chaos" else None
    with LocalRuntime(
        mode=mode, tick_s=1.0, emulators=options, processes=default_processes(), chaos=chaos
    ) as runtime:
        print("ready", flush=True)
        said = 0
        while True:
            notices = runtime.notices
            for notice in notices[said:]:
                print(f"notice {notice}", flush=True)
            said = len(notices)
            time.sleep(0.2)


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:4]))
