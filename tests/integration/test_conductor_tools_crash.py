"""A crash in the middle of a tool step: the runtime SIGKILLed while the agent's tool runs (its
call claimed, no result), the emulators kept running, the runtime restarted. The stranded step
moves again (the watchdog, the dead holder's lease expiring), the call is marked interrupted and
not run again, the model reads that it was interrupted, and the conversation answers.

The lease (``DLAB_LEASE_SECONDS``) and the watchdog's stall threshold
(``DLAB_CONDUCTOR_STALLED_SECONDS``) are the production defaults.
"""

from __future__ import annotations

import time

from conductor_state import attempts, conversation, start
from crashing import (  # noqa: F401 (emulators: a fixture)
    PROJECT,
    emulators,
    environment,
    kill_runtime,
    start_runtime,
    wait_for,
)
from google.cloud import firestore
from tool_state import QUERY, WF, logging_tools, runs, tool_calls, with_tools

from shared.conductor.documents import Status

CID = "killed-in-a-tool"
STEP = "0003"
"""The answerer's step (conductor, extractor, conductor, answerer)."""
MOVE_BOUND_S = 60.0
"""Issue 27: after a SIGKILL and a restart, every stranded unit moves again within 60 s."""
DONE_BOUND_S = 90.0


def _ended(db: firestore.Client) -> bool:
    return conversation(db, CID).status not in (Status.PENDING, Status.RUNNING)


def _call_status(db: firestore.Client) -> str:
    calls = tool_calls(db, CID, STEP)
    return calls[0]["status"] if calls else ""


def test_a_crash_inside_a_tool_does_not_run_it_again(
    emulators,  # noqa: F811
    monkeypatch,
    tmp_path,
):
    monkeypatch.delenv("DLAB_LEASE_SECONDS", raising=False)
    monkeypatch.delenv("DLAB_CONDUCTOR_STALLED_SECONDS", raising=False)
    for name, value in environment(emulators).items():
        monkeypatch.setenv(name, value)
    log = logging_tools(tmp_path, monkeypatch)
    db = firestore.Client(project=PROJECT)
    with_tools(db, "stall")
    runtime = start_runtime(emulators)
    try:
        start(db, CID, QUERY, workflow_id=WF)
        wait_for(lambda: runs(log) == ["stall"], 60, "the tool running")
        kill_runtime(runtime)  # inside the tool: its call claimed, no result
        killed = time.monotonic()
        assert _call_status(db) == "running"
        runtime = start_runtime(emulators)
        restart_s = time.monotonic() - killed
        moved = wait_for(lambda: _call_status(db) == "interrupted", MOVE_BOUND_S, "moved")
        done = moved + wait_for(lambda: _ended(db), DONE_BOUND_S - moved, "terminal")
    finally:
        kill_runtime(runtime)
    print(
        f"\nconductor/SIGKILL inside a tool: restarted {restart_s:.1f} s after the kill; the "
        f"call marked interrupted {moved:.1f} s after the restart, DONE after {done:.1f} s"
    )
    conv = conversation(db, CID)
    assert conv.status == Status.DONE, conv.error
    assert runs(log) == ["stall"]  # not run again
    [call] = tool_calls(db, CID, STEP)
    assert call["isError"] and "was not run again" in call["result"]
    statuses = sorted(a["response"]["status"] for a in attempts(db, CID, STEP))
    assert statuses == ["OK", "TOOL_CALLS"]  # the tool call was not asked again
    [answered] = [a for a in attempts(db, CID, STEP) if a["response"]["status"] == "OK"]
    assert "was not run again" in answered["prompt"]  # the model read it
