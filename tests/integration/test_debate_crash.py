"""The debate's SIGKILL cell of issue 27's fault matrix: the runtime killed while the openings of
a debate are in flight (their model calls sent, no reply yet), the emulators kept running, the
runtime restarted ``DLAB_CRASH_GAP`` seconds later (default 0: the dead holders' leases then have
their whole length still to run, the slowest case). Every statement stranded by the kill must be
made within ``MOVE_BOUND_S`` of the restart (a watchdog tick plus one short renewed lease: the
dead holder's lease is not renewed) and the debate must reach DONE, with the model calls of a
calm run plus at most one more per statement that was in flight.

Before the short renewed leases (a debate turn held its lease 360 s), a 3 s debate stalled 361 s
after a kill with the runtime back 26 s later. The model is a fake OpenAI-compatible server in
this process, outside the killed runtime: it holds every reply until the kill, so the kill finds
the openings in flight. The lease (``DLAB_LEASE_SECONDS``) and the debate's stale threshold
(``DLAB_DEBATE_STALE_SECONDS``) are the production defaults.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from crashing import (  # noqa: F401 (emulators: a fixture)
    PROJECT,
    QUICK,
    emulators,
    environment,
    kill_runtime,
    small_debate,
    start_runtime,
    wait_for,
)
from google.cloud import firestore

from shared.debate import naming
from tests.fakes import Recorded, Step, slow
from tests.fakes import fake_openai as openai
from tools.debate import state as debate_state

D = "killed-mid-debate"
CATEGORIES = ("Cost", "Safety")
LEAVES = 4
"""Two categories of two leaf agents (``tokenLimit`` fits one entry per agent)."""
UNITS = LEAVES + len(CATEGORIES)
"""Statements of a calm run, one model call each: the openings and the heads' syntheses."""
MOVE_BOUND_S = 60.0
"""Issue 27: after a SIGKILL and a restart, every stranded unit moves again within 60 s."""
DONE_BOUND_S = 80.0
HELD_S = 600.0
"""A reply held before the kill outlasts the test (the server's exit wakes it)."""
MODEL = {"apiType": "OPENAI", "modelName": "fake-model"}
REPLY = "Expand the scheme: demand outruns the fleet. Conclusion: expand"


def _holding_until(killed: threading.Event) -> Callable[[Recorded], Step]:
    """Every request before the kill is held (in flight when the runtime dies); later ones are
    answered at once."""

    def respond(request: Recorded) -> Step:
        reply = openai.text(REPLY)
        return reply if killed.is_set() else slow(reply, HELD_S)

    return respond


def _missing(db: firestore.Client) -> set[str]:
    """The statements of the debate's open rounds not made yet."""
    s = debate_state.read(db, D)
    made = {m.id for m in s.statements}
    return {
        naming.statement_id(r.id, a)
        for r in s.rounds
        if not r.complete
        for a in r.agents
        if naming.statement_id(r.id, a) not in made
    }


def _watch(db: firestore.Client, stranded: set[str], restarted: float) -> dict[str, float]:
    """When (seconds after the restart) each stranded statement was made."""
    made: dict[str, float] = {}
    deadline = restarted + DONE_BOUND_S
    while time.monotonic() < deadline:
        s = debate_state.read(db, D)
        for statement in s.statements:
            if statement.id in stranded:
                made.setdefault(statement.id, round(time.monotonic() - restarted, 1))
        if s.done or s.failed:
            break
        time.sleep(0.25)
    return made


def test_statements_killed_in_flight_are_made_again_and_the_debate_finishes(
    emulators,  # noqa: F811
    monkeypatch,
):
    gap = float(os.environ.get("DLAB_CRASH_GAP", "0"))
    monkeypatch.delenv("DLAB_LEASE_SECONDS", raising=False)
    monkeypatch.delenv("DLAB_DEBATE_STALE_SECONDS", raising=False)
    monkeypatch.setitem(QUICK, "DLAB_MODEL_OVERRIDE", "GEMINI=SCRIPTED")  # OPENAI: the fake
    killed = threading.Event()
    with openai.FakeOpenAI(api_key="sk-test") as fake:
        fake.responder = _holding_until(killed)
        for name, value in {
            **environment(emulators),
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": fake.base_url,
        }.items():
            monkeypatch.setenv(name, value)
        db = firestore.Client(project=PROJECT)
        runtime = start_runtime(emulators)
        try:
            db.document(f"debates/{D}").set(small_debate(CATEGORIES, 0, MODEL))
            wait_for(lambda: len(fake.requests) >= LEAVES, 60, "every opening's model call")
            kill_runtime(runtime)  # the openings' calls are in flight
            killed.set()
            in_flight = len(fake.requests)
            stranded = _missing(db)
            assert len(stranded) == LEAVES, stranded
            time.sleep(gap)  # the platform restarting a crashed instance
            runtime = start_runtime(emulators)
            restarted = time.monotonic()
            made = _watch(db, stranded, restarted)
            done_after = round(time.monotonic() - restarted, 1)
        finally:
            kill_runtime(runtime)
        calls = len(fake.requests)
    s = debate_state.read(db, D)
    print(
        f"\nfault cell debate/SIGKILL mid-statement (restart {gap:.0f} s after the kill): "
        f"{len(stranded)} stranded statements made {sorted(made.values())} s after the restart, "
        f"{s.debate.status} {done_after} s after it; {calls} model calls ({in_flight} lost)"
    )
    assert s.done, s.progress()
    late = {i: t for i, t in made.items() if t > MOVE_BOUND_S}
    assert made.keys() == stranded and not late, (made, stranded)
    assert calls <= UNITS + in_flight  # each lost call made again once, nothing else
    assert s.errors == []
