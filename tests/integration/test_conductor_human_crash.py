"""A person in the loop survives a kill: the runtime SIGKILLed while a human step waits, the
answer written while no runtime runs (its trigger's event is lost with it), the runtime
restarted: the watchdog finds the answer beside the waiting step and the conversation
finishes with it, the step completed once. The emulators keep running throughout."""

from __future__ import annotations

import time

from conductor_state import REPO_ROOT, conversation, start, steps
from crashing import (  # noqa: F401 (emulators: a fixture)
    MOVE_BOUND_S,
    PROJECT,
    emulators,
    in_process,
    kill_runtime,
    start_runtime,
    wait_for,
)
from google.cloud import firestore

from functions.conductor import human
from shared.conductor.documents import Status
from tools.load_workflow import load

CID = "killed-while-waiting"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"


def test_a_waiting_step_survives_a_kill_and_an_answer_written_meanwhile(
    in_process,  # noqa: F811 (a fixture: human.submit runs in this process)
):
    ports = in_process
    db = firestore.Client(project=PROJECT)
    load(db, REPO_ROOT / "workflows" / "review", "review")
    runtime = start_runtime(ports)
    try:
        start(db, CID, QUERY, workflow_id="review")
        wait_for(lambda: any(s.waiting is not None for s in steps(db, CID)), 60, "waiting")
        kill_runtime(runtime)
        killed = time.monotonic()
        written = human.submit(CID, {"verdict": "approve"}, by="test")
        assert written == f"conversations/{CID}/humanAnswers/0005"
        runtime = start_runtime(ports)
        restart_s = time.monotonic() - killed
        done = wait_for(
            lambda: conversation(db, CID).status != Status.RUNNING, MOVE_BOUND_S, "finished"
        )
    finally:
        kill_runtime(runtime)
    print(f"\nhuman step killed while waiting: restart {restart_s:.1f} s, DONE {done:.1f} s after")
    conv = conversation(db, CID)
    assert conv.status == Status.DONE, conv.error
    assert (conv.memory["verdict"].value, conv.memory["verdict"].agent) == ("approve", "reviewer")
    assert [(s.index, s.agent, s.status) for s in steps(db, CID)][5:] == [
        (5, "reviewer", "done"),
        (6, "conductor", "done"),
    ]
