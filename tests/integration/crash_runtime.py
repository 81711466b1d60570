"""A local runtime attached to emulators that outlive it, run as its own process so the crash test
can kill it with SIGKILL: ``python tests/integration/crash_runtime.py FS PUBSUB FUNCTIONS``. Prints
``ready`` once it delivers events, then ``notice TEXT`` for each live-log line about its emulators
(``test_emulator_restart_systems`` restarts them). Its functions run in worker processes as ``make
up`` runs them when ``DLAB_WORKER_PROCESSES`` asks for them (``test_crash`` does), so a kill also
tests that the workers die with the runtime instead of finishing its moves as orphans.
``DLAB_CRASH_MODE=chaos``: chaos delivery (``emulator.chaos``, settings from the environment).
``DLAB_CRASH_REQUESTS=FILE``: a line is appended to FILE for each request made to a model
provider, before it is sent, so the count outlives the runtime (functions in this process only)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from emulator.chaos import ChaosSettings
from emulator.config import EmulatorOptions, Ports, default_processes
from emulator.runtime import LocalRuntime
from shared.llm import ModelReply, ModelRequest
from shared.llm.base import ModelClient


class _Counted:
    """A model client that appends a line to ``path`` for each request, before making it."""

    def __init__(self, client: ModelClient, path: str) -> None:
        self._client, self._path = client, path

    def generate(self, request: ModelRequest) -> ModelReply:
        with open(self._path, "a") as counted:
            counted.write(f"{request.seed}\n")
        return self._client.generate(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def main(firestore: int, pubsub: int, functions: int) -> None:
    ports = Ports(firestore=firestore, pubsub=pubsub, functions=functions)
    options = EmulatorOptions(attach=True, ports=ports)
    mode = os.environ.get("DLAB_CRASH_MODE") or "concurrent"
    chaos = ChaosSettings.from_env() if mode == "chaos" else None
    runtime = LocalRuntime(
        mode=mode, tick_s=1.0, emulators=options, processes=default_processes(), chaos=chaos
    )
    counted = os.environ.get("DLAB_CRASH_REQUESTS")
    with contextlib.ExitStack() as stack:
        if counted:  # before the first delivery
            path = counted
            stack.enter_context(runtime.model_wrapper(lambda client: _Counted(client, path)))
        stack.enter_context(runtime)
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
