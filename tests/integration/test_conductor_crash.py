"""The conductor's SIGKILL cell of issue 27's fault matrix: the runtime killed while a step is
in flight (its model call sent, no reply yet), the emulators kept running, the runtime
restarted. The stranded step must move again within ``MOVE_BOUND_S`` of the restart (a watchdog
tick plus one short renewed lease: the dead holder's lease is not renewed) and the conversation
must reach DONE, with the model calls of a calm run plus at most one attempt of the killed step.

The model is a fake OpenAI-compatible server in this process, outside the killed runtime: it
holds its first reply until the test ends, so the kill always finds the step in flight. The
lease (``DLAB_LEASE_SECONDS``) and the watchdog's stall threshold
(``DLAB_CONDUCTOR_STALLED_SECONDS``) are the production defaults.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable

from conductor_state import conversation, load_example, start, steps
from crashing import (  # noqa: F401 (emulators: a fixture)
    PROJECT,
    QUICK,
    emulators,
    environment,
    kill_runtime,
    start_runtime,
    wait_for,
)
from google.cloud import firestore

from shared.conductor.documents import Status, StepStatus
from shared.llm.policy import call_policy
from shared.llm.scripted import generate_value
from tests.fakes import Recorded, Step, slow
from tests.fakes import fake_openai as openai

WF = "crashing"
CID = "killed-mid-step"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
AGENTS = ("extractor", "answerer")
"""The example's rules call the model once per agent: a calm run makes two calls."""
TURNS = 3
"""Replies one attempt of a step may ask for (the example's agents' maxAttempts)."""
MOVE_BOUND_S = 60.0
"""Issue 27: after a SIGKILL and a restart, every stranded unit moves again within 60 s."""
DONE_BOUND_S = 90.0
HELD_S = 600.0
"""The first reply is held longer than the test (the server's exit wakes it)."""


def _holding_the_first(arrived: threading.Event) -> Callable[[Recorded], Step]:
    """Answers schema-valid JSON at once, except the first request: held (the step in flight)."""

    def respond(request: Recorded) -> Step:
        schema = request.body["response_format"]["json_schema"]["schema"]
        reply = openai.text(json.dumps(generate_value(random.Random(1), schema)))
        if arrived.is_set():
            return reply
        arrived.set()
        return slow(reply, HELD_S)

    return respond


def _step_status(db: firestore.Client, index: int) -> StepStatus:
    return next(s.status for s in steps(db, CID) if s.index == index)


def _ended(db: firestore.Client) -> bool:
    return conversation(db, CID).status not in (Status.PENDING, Status.RUNNING)


def test_a_step_killed_in_flight_moves_again_and_the_conversation_answers(
    emulators,  # noqa: F811
    monkeypatch,
):
    monkeypatch.delenv("DLAB_LEASE_SECONDS", raising=False)
    monkeypatch.delenv("DLAB_CONDUCTOR_STALLED_SECONDS", raising=False)
    monkeypatch.setitem(QUICK, "DLAB_MODEL_OVERRIDE", "")  # the workflow's own provider: the fake
    arrived = threading.Event()
    with openai.FakeOpenAI(api_key="sk-test") as fake:
        fake.responder = _holding_the_first(arrived)
        for name, value in {
            **environment(emulators),
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": fake.base_url,
            "DLAB_MODEL_BACKOFF_S": "0.01",
            "DLAB_MODEL_BACKOFF_MAX_S": "0.05",
        }.items():
            monkeypatch.setenv(name, value)
        db = firestore.Client(project=PROJECT)
        load_example(db, WF)
        settings = {"modelSettings": {"apiType": "OPENAI", "modelName": "fake-model"}}
        for doc in (f"workflows/{WF}", *(f"workflows/{WF}/agents/{a}" for a in AGENTS)):
            db.document(doc).update(settings)
        runtime = start_runtime(emulators)
        try:
            start(db, CID, QUERY, workflow_id=WF)
            wait_for(arrived.is_set, 60, "the first model call")
            stranded = conversation(db, CID).current_step
            kill_runtime(runtime)  # the step's model call is in flight
            killed = time.monotonic()
            assert _step_status(db, stranded) == StepStatus.PENDING
            runtime = start_runtime(emulators)
            restart_s = time.monotonic() - killed
            moved = wait_for(
                lambda: _step_status(db, stranded) != StepStatus.PENDING, MOVE_BOUND_S, "moved"
            )
            done = moved + wait_for(lambda: _ended(db), DONE_BOUND_S - moved, "terminal")
        finally:
            kill_runtime(runtime)
        calls = len(fake.requests)
    conv = conversation(db, CID)
    print(
        f"\nfault cell conductor/SIGKILL mid-step: restarted {restart_s:.1f} s after the kill; "
        f"step {stranded} moved again {moved:.1f} s after the restart, DONE after {done:.1f} s; "
        f"{calls} model call(s)"
    )
    assert conv.status == Status.DONE, conv.error
    assert conv.answer
    per_attempt = call_policy().max_attempts * TURNS
    assert len(AGENTS) + 1 <= calls <= len(AGENTS) + per_attempt  # the lost call, redone once
