"""The emulator pair and the receiver, shared by every LocalRuntime of this process.

Sharing matters beyond start-up time: the functions read the emulator hosts from the process
environment and cache their clients, so runtimes alive at the same time must agree on the hosts.
They isolate themselves by project id instead (triggers, data and topics are all per project).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import tempfile
import threading
from pathlib import Path

from emulator import processes
from emulator.receiver import Receiver

log = logging.getLogger(__name__)


class Services:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        firestore_port, pubsub_port = processes.free_port(), processes.free_port()
        self.pubsub = processes.EmulatorProcess(
            "pubsub-emulator",
            processes.pubsub_command(pubsub_port),
            pubsub_port,
            log_dir / "pubsub.log",
        )
        self.receiver = Receiver()
        try:
            command = processes.firestore_command(firestore_port, self.receiver.host)
        except BaseException:
            self.receiver.stop()
            raise
        self.firestore = processes.EmulatorProcess(
            "firestore-emulator", command, firestore_port, log_dir / "firestore.log"
        )

    def start(self) -> None:
        self.receiver.start()
        try:
            self.firestore.start()
            self.pubsub.start()
            self.firestore.wait_ready()
            self.pubsub.wait_ready()
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

    def stop(self) -> None:
        for stop in (self.firestore.stop, self.pubsub.stop, self.receiver.stop):
            with contextlib.suppress(Exception):
                stop()


_lock = threading.Lock()
_shared: Services | None = None
_users = 0


def acquire(log_dir: Path | None = None) -> Services:
    """Start the services on first use; later callers share them."""
    global _shared, _users
    with _lock:
        if _shared is None:
            services = Services(log_dir or Path(tempfile.mkdtemp(prefix="dlab-emulators-")))
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
