"""The live log's reads against a Firestore emulator that does not answer end within their
bound (issue 40: ``make up did not stop within 60 s of Ctrl-C``, "Stopping ..." never printed).

``make up``'s main thread polls the live log, and after Ctrl-C polled it once more before it
said ``Stopping ...``; each read had the client's default timeout (300 s, retried for 300 s
more), so an emulator stalled under load held Ctrl-C up for minutes. The emulator is stopped
here with SIGSTOP (it holds its connections and answers nothing, as a stalled one does).
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time

import pytest
from crashing import standalone_emulators
from google.api_core.exceptions import GoogleAPICallError
from google.cloud import firestore

from emulator.livelog import LiveLog

pytestmark = pytest.mark.emulator

PROJECT = "demo-livelog-stalled"
BOUND_S = 2.0
ENDED_WITHIN_S = 30.0
"""Generous for a loaded machine; the read it bounds lasted 300 s."""


def test_a_poll_against_a_stalled_firestore_emulator_ends_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with standalone_emulators("dlab-livelog-") as (ports, emulator, _):
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{ports.firestore}")
        db = firestore.Client(project=PROJECT)
        db.document("experiments/e/participants/p").set({"currentStageId": "tos"})
        out = io.StringIO()
        feed = LiveLog(db, None, out=out, color=False)
        feed.poll(BOUND_S)
        assert "tos" in out.getvalue()  # it answers: the poll reads and shows
        pid = emulator.pid
        assert pid is not None
        ended: list[BaseException | None] = []

        def poll() -> None:
            try:
                feed.poll(BOUND_S)
                ended.append(None)
            except BaseException as error:
                ended.append(error)

        os.killpg(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            reader = threading.Thread(target=poll, daemon=True)
            reader.start()
            reader.join(ENDED_WITHIN_S)
            took = time.monotonic() - began
        finally:
            os.killpg(pid, signal.SIGCONT)
        assert not reader.is_alive(), f"the poll still reads after {ENDED_WITHIN_S} s"
        assert isinstance(ended[0], GoogleAPICallError), ended  # DeadlineExceeded
        print(f"a poll against the stalled emulator ended in {took:.1f} s ({ended[0]!r})")
