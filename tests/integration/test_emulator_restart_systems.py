"""The real emulators killed (SIGKILL) and restarted under a runtime running the demo experiment
mid-chat (issue 40, rows 8 and 9): the agents move again soon after, the run finishes with every
agent at SUCCESS and no message twice, a small debate begun before the kill (in flight across
the outage) ends DONE with a decision, and so does a small society through the Pub/Sub restart
(every day closed, its audit clean), a conductor conversation begun after the restart ends DONE,
and the runtime says what it re-armed in one line.

The society is not run through the Firestore restart: the data going back to the export while
the runtime's close goes on left a society with a day closed whose next day's members were lost
(its audit: "day 1: food changed -39.5, flows say 0") or a record blaming a close plan that
was gone, in 3 of 12 runs (bench/RESULTS.md section 16).

``test_emulator_restart`` proves the re-arming on probe functions; this module runs the real
functions, whose threads, leases, locks and watchdog must survive the outage too. The runtime
(``crash_runtime.py``) is attached to emulators this module starts, as ``make up --attach`` is:
the test restarts them, the Firestore one from an export taken just before the kill (``--import``,
row 9: the data comes back, with this runtime's health marker in it). How soon the agents moved
again (the agents, the society, the debate) is printed for bench/RESULTS.md; the test bounds only
that the runs finish.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_docs import chat_messages, check_no_message_twice
from conductor_state import conversation, finished, load_example, start
from crashing import (
    PROJECT,
    all_done,
    environment,
    kill_runtime,
    positions,
    small_debate,
    standalone_emulators,
    start_runtime,
    wait_for,
)
from experiment_state import errors, template
from google.cloud import firestore

from emulator import config, persistence, processes
from emulator.firestore_admin import FirestoreAdmin
from shared.conductor.documents import Status
from tools.debate import state as debate_state
from tools.load_template import load
from tools.society import client as society

pytestmark = pytest.mark.emulator

AGENTS = 3
MID_CHAT = 2
"""Messages in the group chat when the emulator is killed."""
FINISH_S = 120.0
"""The whole run after the restart (the chat's remaining turns included); the issue's 10 s is
the time to move again, measured and printed, not asserted (a timing goal: bench/)."""
OUTAGE_FIELDS = ("(function)", "(platform)")
"""An error met during the outage is recorded (the entry point records what it cannot name)
and retried; no record may blame a document or say a unit gave up."""
SOCIETY = {"agents": 4, "days": 2, "seed": 5, "dayDeadlineS": 60, "redriveS": 2}
"""Small (as ``test_society_crash``: a turn with no action and no live lease re-driven after
2 s, so a publish lost in the outage waits a tick, not the default 30 s)."""
CATEGORIES = ("Cost", "Safety")


def _blamed(records: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(document, field, reason) records that blame a document or say a unit gave up."""
    return [r for r in records if r[1] not in OUTAGE_FIELDS or "gave up" in r[2]]


def _rows(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """A society's or a debate's error records as (document, field, reason)."""
    return [(str(r.get("document")), str(r.get("field")), str(r.get("reason"))) for r in records]


class InFlight:
    """A debate (and a society, when ``society_too``) begun before the kill: their progress,
    whether they finished, and their checks."""

    def __init__(self, db: firestore.Client, society_too: bool) -> None:
        self.db = db
        self.sid = society.create(db, SOCIETY) if society_too else ""
        self.debate = f"restarted-{uuid.uuid4().hex[:8]}"  # one per test: shared emulators
        debate = small_debate(CATEGORIES, 1, {"apiType": "SCRIPTED", "modelName": ""})
        db.document(f"debates/{self.debate}").set(debate)  # 10 statements: 1 argument round

    def under_way(self) -> bool:
        begun = debate_state.read(self.db, self.debate).statements != []
        return begun and (not self.sid or society.days(self.db, self.sid) != [])

    def progress(self) -> dict[str, Callable[[], object]]:
        """Per system, what changes as it moves: the debate's progress figures; the society's
        days (status, close step) and events."""
        found: dict[str, Callable[[], object]] = {
            "debate": lambda: debate_state.read(self.db, self.debate).progress()
        }
        if self.sid:
            found["society"] = lambda: (
                [(d.day, d.status, d.phase) for d in society.days(self.db, self.sid)],
                len(society.events(self.db, self.sid)),
            )
        return found

    def finished(self) -> dict[str, Callable[[], bool]]:
        found: dict[str, Callable[[], bool]] = {
            "debate": lambda: debate_state.read(self.db, self.debate).done
        }
        if self.sid:
            found["society"] = lambda: society.closed_days(self.db, self.sid) == SOCIETY["days"]
        return found

    def check(self) -> None:
        """The debate DONE with a decision, every round complete; the society running with
        every day summarised and its audit clean; no record blaming a document."""
        s = debate_state.read(self.db, self.debate)
        assert s.done and all(r.complete for r in s.rounds), s.progress()
        assert (s.debate.decision or {}).get("conclusion"), s.debate.decision
        records = _rows(s.errors)
        if self.sid:
            assert society.read_society(self.db, self.sid).status == "running"
            summaries = society.summaries(self.db, self.sid)
            assert [d.day for d in summaries] == list(range(1, SOCIETY["days"] + 1))
            audit = society.audit(self.db, self.sid)
            assert audit.ok, audit.problems
            records += _rows(society.error_records(self.db, self.sid))
        assert not _blamed(records), records


def _first_moves(probes: dict[str, Callable[[], object]], since: float) -> dict[str, float]:
    """Seconds after ``since`` at which each probe's value first changed from its value now."""
    before = {name: probe() for name, probe in probes.items()}
    moved: dict[str, float] = {}
    while len(moved) < len(probes):
        assert time.monotonic() - since < FINISH_S, (
            f"no move within {FINISH_S} s: {moved} of {before}"
        )
        for name, probe in probes.items():
            if name not in moved and probe() != before[name]:
                moved[name] = time.monotonic() - since
        time.sleep(0.25)
    return moved


class Emulators:
    def __init__(
        self,
        ports: config.Ports,
        firestore: processes.EmulatorProcess,
        pubsub: processes.EmulatorProcess,
        logs: Path,
    ) -> None:
        self.ports, self.firestore, self.pubsub, self.logs = ports, firestore, pubsub, logs


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulators]:
    with standalone_emulators("dlab-restart-systems-") as (ports, firestore, pubsub):
        yield Emulators(ports, firestore, pubsub, tmp_path_factory.mktemp("export"))


class Notices:
    """The runtime's ``notice`` lines, read on a thread as they come."""

    def __init__(self, runtime: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(runtime,), daemon=True).start()

    def _read(self, runtime: subprocess.Popen[str]) -> None:
        assert runtime.stdout is not None
        for line in runtime.stdout:
            if line.startswith("notice "):
                self._lines.put(line.removeprefix("notice ").rstrip("\n"))

    def said(self) -> list[str]:
        while not self._lines.empty():
            self.seen.append(self._lines.get_nowait())
        return self.seen


def _kill(emulator: processes.EmulatorProcess) -> None:
    """SIGKILL the emulator's process group, as a crash would."""
    assert emulator.pid is not None
    os.killpg(emulator.pid, signal.SIGKILL)
    wait_for(lambda: emulator.exit_code() is not None, 30, f"{emulator.name} dead")


def _start_again(emulator: processes.EmulatorProcess) -> float:
    """Started from a thread of its own: from the main thread the child runs Python before its
    exec (``PR_SET_PDEATHSIG``), and this process's gRPC clients, busy at the fork, sometimes
    aborted it (exit -6, "epoll_wait error: Bad file descriptor" in its log)."""
    starter = threading.Thread(target=emulator.start, name="emulator restart")
    starter.start()
    starter.join()
    emulator.wait_ready()
    return time.monotonic()


def _run_through_restart(
    emulators: Emulators,
    monkeypatch: pytest.MonkeyPatch,
    restart: Callable[[], float],
    said: str,
    society_too: bool,
) -> None:
    for name, value in environment(emulators.ports).items():
        monkeypatch.setenv(name, value)
    db = firestore.Client(project=PROJECT)
    runtime = start_runtime(emulators.ports)
    notices = Notices(runtime)
    try:
        load_example(db)
        demo = template("demo_all_stages.json")
        loaded = load(db, demo, agents=AGENTS, api_type="SCRIPTED", seed=0)
        e, cohort = loaded.experiment_id, loaded.cohort_id
        chats = [(s["id"], cohort) for s in demo["stageConfigs"] if s["kind"] == "chat"]
        stage = chats[0][0]
        said_in_chat = lambda: len(chat_messages(db, e, stage_id=stage, cohort=cohort))  # noqa: E731
        wait_for(lambda: said_in_chat() >= 1, FINISH_S, "the chat begun")
        others = InFlight(db, society_too)
        wait_for(
            lambda: said_in_chat() >= MID_CHAT and others.under_way(),
            FINISH_S,
            "the chat and the other systems under way",
        )
        progress = {"agents": lambda: positions(db, e, chats), **others.progress()}
        in_flight = {name: probe() for name, probe in progress.items() if name != "agents"}
        answered = restart()
        moved = _first_moves(progress, answered)
        finished_at: dict[str, float] = {}
        try:
            for name, reached in {"agents": lambda: all_done(db, e), **others.finished()}.items():
                wait_for(reached, FINISH_S, f"the {name} finished")
                finished_at[name] = time.monotonic() - answered
        except AssertionError as stalled:
            where = {name: probe() for name, probe in progress.items()}
            raise AssertionError(f"{stalled}: {where}; the runtime said {notices.said()}") from None
        # a conductor conversation begun once the runtime said it re-armed (one begun in the
        # second before is the watchdog's to re-drive, as production's lost events are)
        wait_for(lambda: any(said in n for n in notices.said()), FINISH_S, "the line said")
        start(db, e, "Which project first?")
        ended = wait_for(finished(db, e), FINISH_S, "the conversation begun after the restart")
        figures = ", ".join(
            f"{name} moved again {moved[name]:.1f} s and finished {finished_at[name]:.1f} s"
            for name in moved
        )
        print(
            f"restart: after the emulator answered, {figures}; a conversation begun after the "
            f"line ended in {ended:.1f} s ({said!r}: {notices.said()}; in flight at the kill: "
            f"{in_flight})"
        )
    finally:
        kill_runtime(runtime)
    check_no_message_twice(db, e, stage_id=stage, cohort=cohort)
    assert conversation(db, e).status == Status.DONE, conversation(db, e).error
    records = [(r.document, r.field, r.reason) for r in errors(db, e)]
    assert not _blamed(records), records
    others.check()
    lines = [n for n in notices.said() if said in n]
    assert len(lines) == 1, notices.said()


def test_the_pubsub_emulator_killed_mid_chat_and_restarted_the_run_finishes(
    emulators: Emulators, monkeypatch: pytest.MonkeyPatch
) -> None:
    def restart() -> float:
        _kill(emulators.pubsub)
        return _start_again(emulators.pubsub)

    _run_through_restart(emulators, monkeypatch, restart, "subscriptions again", society_too=True)


def test_the_firestore_emulator_killed_mid_chat_and_restarted_with_its_export_the_run_finishes(
    emulators: Emulators, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = emulators.firestore.host
    functions_host = f"127.0.0.1:{emulators.ports.functions}"

    def restart() -> float:
        exported = persistence.export(FirestoreAdmin(host, PROJECT), emulators.logs)
        _kill(emulators.firestore)
        emulators.firestore.command = lambda port: processes.firestore_command(
            port, functions_host, exported
        )
        return _start_again(emulators.firestore)

    _run_through_restart(emulators, monkeypatch, restart, "triggers", society_too=False)
