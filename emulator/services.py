"""The emulator pair and the receiver, shared by every LocalRuntime of this process.

Sharing matters beyond start-up time: the functions read the emulator hosts from the process
environment and cache their clients, so runtimes alive at the same time must agree on the hosts.
They isolate themselves by project id instead (triggers, data and topics are all per project).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import shutil
import tempfile
import threading
from pathlib import Path

from emulator import persistence, processes
from emulator.config import EmulatorOptions
from emulator.receiver import Receiver

log = logging.getLogger(__name__)


class Services:
    def __init__(self, log_dir: Path | None, options: EmulatorOptions | None = None) -> None:
        self.options = options or EmulatorOptions()
        self.temporary_logs = log_dir is None
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="dlab-emulators-"))
        ports = self.options.ports
        self.receiver = Receiver(ports.functions)
        self._revive_lock = threading.Lock()
        self._given_up: set[str] = set()
        try:
            self.firestore, self.pubsub = self._emulators()
        except BaseException:
            self.receiver.stop()
            raise

    def _emulators(
        self,
    ) -> tuple[processes.EmulatorProcess | processes.RunningEmulator, ...]:
        ports = self.options.ports
        if self.options.attach:
            return (
                processes.RunningEmulator("firestore-emulator", ports.firestore),
                processes.RunningEmulator("pubsub-emulator", ports.pubsub),
            )
        seed = persistence.import_file(self.options.import_dir) if self.options.import_dir else None
        return processes.emulator_pair(
            ports.firestore, ports.pubsub, self.receiver.host, self.log_dir, seed
        )

    def start(self) -> None:
        self.receiver.start()
        try:
            processes.start_together((self.firestore, self.pubsub))
        except BaseException:
            self.stop()
            raise
        log.info(
            "emulators up: firestore %s, pubsub %s, receiver %s (logs in %s)",
            self.firestore.host,
            self.pubsub.host,
            self.receiver.host,
            self.log_dir,
        )

    def revive(self) -> list[str]:
        """Start again, on its port, an emulator of ours that ended by itself (killed, crashed);
        a sentence for the live log per emulator. Runtimes sharing the services all call it:
        the first restarts, the others find it running. Attached emulators are their owner's
        to restart (``emulator.health`` notices when they were)."""
        notices = []
        with self._revive_lock:
            for emulator in (self.firestore, self.pubsub):
                code = emulator.exit_code()
                if code is not None and emulator.name not in self._given_up:
                    notices.append(self._restart(emulator, code))
        return notices

    def _restart(
        self, emulator: processes.EmulatorProcess | processes.RunningEmulator, code: int
    ) -> str:
        what = f"the {emulator.name} on {emulator.host} exited ({code})"
        try:
            emulator.start()
            emulator.wait_ready()
        except (processes.EmulatorStartError, OSError) as error:
            self._given_up.add(emulator.name)  # one attempt: a crash loop would fill the log
            return f"{what} and did not start again: {error}"
        log.info("%s: restarted", what)
        return f"{what}: started it again on the same port (the data written since is lost)"

    def stop(self) -> None:
        for stop in (self.firestore.stop, self.pubsub.stop, self.receiver.stop):
            with contextlib.suppress(Exception):
                stop()
        if self.temporary_logs and not self.options.keep_logs:
            shutil.rmtree(self.log_dir, ignore_errors=True)


_lock = threading.Lock()
_shared: Services | None = None
_users = 0


def acquire(log_dir: Path | None = None, options: EmulatorOptions | None = None) -> Services:
    """Start the services on first use; later callers share them (and the first one's options)."""
    global _shared, _users
    with _lock:
        if _shared is None:
            services = Services(log_dir, options)
            services.start()
            _shared = services
        _users += 1
        return _shared


def release(services: Services) -> None:
    """Stop the services when their last user releases them."""
    global _shared, _users
    with _lock:
        if services is not _shared:
            return
        _users -= 1
        if _users <= 0:
            _shared, _users = None, 0
            services.stop()


@atexit.register
def _stop_at_exit() -> None:
    global _shared, _users
    with _lock:
        if _shared is not None:
            _shared.stop()
            _shared, _users = None, 0
