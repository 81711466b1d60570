"""Emulators restarted under a running runtime: noticed within a check, re-armed, said once.

A restarted Firestore emulator has forgotten the runtime's trigger registrations, and a restarted
Pub/Sub emulator its topics and subscriptions; neither says so, and the runtime went on deaf: agents
moved only when the watchdog re-drove them, a chat froze for good. The emulator has no endpoint that
lists triggers, so the runtime leaves a marker document of its own when it registers them: a marker
gone means the emulator lost what it held (restarted, or this project's data cleared by someone
else), and registering again is safe (an id re-registered replaces its trigger: nothing is delivered
twice). An emulator restarted with an import has the marker back (it was exported with the data) and
no trigger: a check refused or cut off (not a slow answer) also arms again at the next answer (issue
40 row 9: a chat stalled for good). Pub/Sub answers for itself: a subscription of ours missing.

The checks run on a thread of the runtime every ``CHECK_EVERY_S``, over REST: a gRPC channel waits
out its reconnect backoff after a restart (seconds), a new HTTP connection does not.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import urllib.error
import uuid
from collections.abc import Callable

from emulator.firestore_admin import AdminError, FirestoreAdmin

log = logging.getLogger(__name__)

CHECK_EVERY_S = 1.0
"""How often a runtime checks its emulators: a restart is re-armed within about this (the
issue's bound is 10 s)."""
CHECK_TIMEOUT_S = 5.0
"""One check's answer; an emulator this slow is checked again next time, not re-armed."""
SILENT_FOR_S = 5.0
"""An emulator that does not answer for this long is said to be down (once); a shorter silence is
a loaded machine or a restart under way, said by the re-arming line if it was one."""
MARKER_COLLECTION = "_runtimeHealth"

Check = Callable[[], str | None]
"""One emulator's check: a sentence for the live log when something happened, else None."""


def _timed_out(error: BaseException) -> bool:
    """A check that got no answer in time (a loaded machine), as opposed to one refused or cut
    off (an emulator that went away)."""
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    return isinstance(reason, TimeoutError)


class Silence:
    """When an emulator stopped answering, so that an outage is said once, and its end too."""

    def __init__(self, name: str, host: str) -> None:
        self._what = f"the {name} at {host}"
        self._since: float | None = None
        self._said = False

    def failed(self, error: BaseException) -> str | None:
        """This check got no answer; a sentence the first time the silence outlasts
        ``SILENT_FOR_S``."""
        now = time.monotonic()
        self._since = self._since or now
        if self._said or now - self._since < SILENT_FOR_S:
            return None
        self._said = True
        return f"{self._what} does not answer ({error}); waiting for it"

    def answered(self) -> str | None:
        """This check got an answer; a sentence if the silence had been said."""
        said, self._since, self._said = self._said, None, False
        return f"{self._what} answers again" if said else None


class TriggerMarker:
    """The Firestore emulator holds this runtime's triggers while it holds its marker.

    ``arm`` registers every trigger (idempotent); the marker is written after it, so an arming
    cut short by the emulator dying again is done again at the next check."""

    def __init__(self, admin: FirestoreAdmin, arm: Callable[[], int]) -> None:
        self._admin = admin
        self._arm = arm
        self._path = f"{MARKER_COLLECTION}/{uuid.uuid4().hex}"
        self._silence = Silence("Firestore emulator", admin.host)
        self._lock = threading.Lock()
        self._went_away = False
        """A check was refused or cut off (not merely slow) since the last arming: the emulator
        may have restarted, and one restarted with an import has the marker back (exported
        with the data) but none of the triggers."""

    def arm(self) -> int:
        """Register the triggers and leave the marker; the number of triggers registered."""
        with self._lock:
            return self._armed()

    def _armed(self) -> int:
        registered = self._arm()
        self._admin.put_document(self._path, {"armedAt": time.time()}, CHECK_TIMEOUT_S)
        return registered

    def reset(self, clear: Callable[[], None]) -> None:
        """Run ``clear`` (a data reset, which deletes the marker too) and leave the marker
        again, with no check in between to take the reset for a restart."""
        with self._lock:
            clear()
            self._admin.put_document(self._path, {"armedAt": time.time()}, CHECK_TIMEOUT_S)

    def remove(self) -> None:
        """Take the marker away (the runtime stops), if the emulator still answers."""
        with self._lock, contextlib.suppress(OSError, RuntimeError):
            self._admin.delete_document(self._path, CHECK_TIMEOUT_S)

    def check(self) -> str | None:
        with self._lock:
            try:
                present = self._admin.document_exists(self._path, CHECK_TIMEOUT_S)
            except (OSError, AdminError) as error:
                self._went_away = self._went_away or not _timed_out(error)
                return self._silence.failed(error)
            back = self._silence.answered()
            if present and not self._went_away:
                return back
            registered = self._armed()
            self._went_away = False
        if present:
            return (
                f"the Firestore emulator at {self._admin.host} went away and came back with "
                f"this runtime's marker (restarted with its data, --import): registered "
                f"{registered} triggers again"
            )
        return (
            f"the Firestore emulator at {self._admin.host} had forgotten this runtime's "
            f"triggers (restarted, or the project's data cleared): registered {registered} again"
        )


class Watch:
    """Runs the checks every ``CHECK_EVERY_S`` on a thread until stopped, and says what a round
    found in one line; a check that fails (an emulator dying again mid-arming) is logged once
    and tried again at the next round."""

    def __init__(self, checks: list[Check], say: Callable[[str], None]) -> None:
        self._checks = checks
        self._say = say
        self._last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="emulator health", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(CHECK_EVERY_S):
            notices = [n for check in self._checks if (n := self._once(check))]
            if notices and not self._stop.is_set():
                self._say("; ".join(notices))  # one line for one restart, whatever it took

    def _once(self, check: Check) -> str | None:
        try:
            return check()
        except Exception as error:  # an emulator going away mid-check: the next round retries
            if str(error) != self._last_error:
                log.warning("emulator check failed (tried again each round): %s", error)
            self._last_error = str(error)
            return None
