"""The debate's row of the fault matrix (issue 27), on the real emulators and the fake
OpenAI-compatible server: a user function raises (``format_agent_response``,
``draw_final_conclusion``, ``compare_responses``), a reply that is not JSON, an empty reply, the
first event lost, the provider answering 503 for 20 s.

Each cell asserts a terminal state within a stated bound (DONE, or FAILED with a failure and an
error record naming the cause), model calls (what the fake received) within the attempt budget
x calls per attempt x units touched, and, where every call is logged, the debate's logs equal to
the provider's count. The cells share the session's runtime and one fake server.

The debate of every cell: two categories of two leaf agents each (four openings), each cluster
debated by its head (two syntheses), ``numRounds`` 0, one corrective turn (``numRetries`` 1),
two provider attempts per turn (``DLAB_MODEL_MAX_ATTEMPTS``) with a short backoff.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from delivery_policies import Losing

from functions.settings import BackboneSettings
from shared.debate import kits
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai
from tools.debate import state as debate_state

pytestmark = pytest.mark.usefixtures("clean")

ATTEMPTS = BackboneSettings().work_max_attempts
"""The unit's attempt budget (DLAB_WORK_MAX_ATTEMPTS, 3)."""
PROVIDER_ATTEMPTS = 2
"""DLAB_MODEL_MAX_ATTEMPTS here: provider attempts per turn."""
TURNS = 2
"""numRetries 1: the reply and one corrective turn."""
PER_ATTEMPT = TURNS * PROVIDER_ATTEMPTS
"""Most model calls one attempt of one statement makes."""
LEAVES = 4
UNITS = LEAVES + 2
"""Statement units of a whole debate: four openings and two heads' syntheses."""
BOUND_S = 30.0
"""A fault ends the debate (or the debate finishes) within this, on a loaded machine."""

CALLED: collections.Counter[str] = collections.Counter()
"""Calls of the raising user functions below."""


def _raises(name: str) -> Callable[..., Any]:
    def fn(*_: Any) -> Any:
        CALLED[name] += 1
        raise KeyError(f"{name} is broken")

    return fn


kits.format_agent_response("fault_raises")(_raises("format"))
kits.draw_final_conclusion("fault_raises")(_raises("conclude"))
kits.compare_responses("fault_raises")(_raises("compare"))


@dataclasses.dataclass
class Provider:
    """The fake's behaviour for a cell: a reply, or 503 until ``outage_until``."""

    reply: str = "Expand the scheme: demand outruns the fleet. Conclusion: expand"
    outage_until: float = 0.0

    def __call__(self, request: Recorded) -> Step:
        if time.monotonic() < self.outage_until:
            return openai.error(503, "The server is overloaded", "server_error")
        return openai.text(self.reply)


@pytest.fixture(scope="module")
def fake() -> Iterator[openai.FakeOpenAI]:
    with openai.FakeOpenAI() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def provider(db, fake, monkeypatch) -> Provider:
    """The debate's OPENAI model goes to the fake (only Gemini stays scripted)."""
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "GEMINI=SCRIPTED")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DLAB_MODEL_MAX_ATTEMPTS", str(PROVIDER_ATTEMPTS))
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.05")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "0.1")
    monkeypatch.setenv("DLAB_DEBATE_STALE_SECONDS", "1")
    behaviour = Provider()
    fake.responder = behaviour
    with fake._lock:
        fake.requests.clear()
    CALLED.clear()
    return behaviour


def _settings(functions: str = "generic", prompts: str = "generic", **overrides: Any) -> Any:
    categories = ["Cost", "Cost", "Safety", "Safety"]
    data = [
        {"data": f"Fact {i}: stations and riders, as measured.", "category": c}
        for i, c in enumerate(categories)
    ]
    roles = ("formatAgentResponse", "drawFinalConclusion", "compareResponses")
    return {
        "name": "Faults",
        "numRounds": 0,
        "numLayers": 1,
        "tokenLimit": 30,
        "seed": 1,
        "numRetries": TURNS - 1,
        "categories": ["Cost", "Safety"],
        "userFunctions": {**dict.fromkeys(roles, functions), "prompts": prompts},
        "model": {"apiType": "OPENAI", "modelName": "fake-model"},
        "data": data,
        **overrides,
    }


def _terminal(runtime, db, d: str, *, tick: bool = False) -> debate_state.DebateState:
    """The debate once DONE or FAILED (the watchdog ticked every second when ``tick``), then
    the runtime idle (so every call the fault caused is counted)."""
    began = time.monotonic()
    while True:
        s = debate_state.read(db, d)
        if s.done or s.failed:
            break
        waited = time.monotonic() - began
        assert waited < BOUND_S, f"{d} not DONE nor FAILED after {waited:.0f} s: {s.progress()}"
        if tick:
            runtime.tick()
        time.sleep(1.0 if tick else 0.3)
    runtime.wait_until_idle(timeout=60)
    return debate_state.read(db, d)


def _calls(fake: openai.FakeOpenAI) -> int:
    with fake._lock:
        return len(fake.requests)


def _logged(db, d: str) -> int:
    return len(list(db.collection(f"debates/{d}/logs").stream()))


def _failed_by(s: debate_state.DebateState, *words: str) -> None:
    """FAILED, its failure and one of its error records naming the cause."""
    assert s.failed, s.progress()
    failure = s.debate.failure
    assert failure is not None
    shown = f"{failure.field} {failure.reason}"
    assert all(w in shown for w in words), failure
    assert s.errors, "no error record"
    assert any(all(w in f"{r['field']} {r['reason']}" for w in words) for r in s.errors), s.errors


def _quiet_ticks(runtime, db, d: str, fake: openai.FakeOpenAI) -> None:
    """A FAILED debate is left alone: ticks of the watchdog call nothing and record nothing."""
    calls, records = _calls(fake), len(debate_state.read(db, d).errors)
    for _ in range(3):
        runtime.tick()
        runtime.wait_until_idle(timeout=60)
    assert (_calls(fake), len(debate_state.read(db, d).errors)) == (calls, records)


@pytest.mark.parametrize(
    ("role", "name"), [("formatAgentResponse", "format"), ("drawFinalConclusion", "conclude")]
)
def test_a_user_function_that_raises_fails_the_debate_after_one_call_per_statement(
    runtime, db, fake, provider, role: str, name: str
) -> None:
    settings = _settings()
    settings["userFunctions"][role] = "fault_raises"
    db.document("debates/a").set(settings)
    s = _terminal(runtime, db, "a")
    _failed_by(s, "fault_raises", "KeyError")
    calls = _calls(fake)
    print(f"cell a ({name} raises): {calls} model calls, {CALLED[name]} user calls")
    assert 1 <= calls <= 1 * LEAVES  # one attempt, one call, per opening at most
    assert CALLED[name] <= LEAVES
    assert s.debate.failure is not None and s.debate.failure.attempts == 1
    _quiet_ticks(runtime, db, "a", fake)


def test_a_compare_responses_that_raises_fails_the_debate_once(runtime, db, fake, provider):
    """Called when the first layer's heads are clustered for the second: the layer's
    completion check ends at once; no watchdog tick raises it again."""
    settings = _settings(numLayers=2)
    settings["userFunctions"]["compareResponses"] = "fault_raises"
    db.document("debates/b").set(settings)
    s = _terminal(runtime, db, "b")
    _failed_by(s, "compare_responses", "fault_raises")
    calls = _calls(fake)
    print(f"cell b (compare_responses raises): {calls} model calls, {CALLED['compare']} raises")
    assert calls == UNITS == _logged(db, "b")  # the first layer's statements, nothing more
    assert CALLED["compare"] == 1
    _quiet_ticks(runtime, db, "b", fake)
    assert CALLED["compare"] == 1


@pytest.mark.parametrize(("cell", "reply"), [("c", "I would buy, clearly."), ("d", "")])
def test_a_reply_that_is_not_json_or_empty_fails_the_debate_within_the_budget(
    runtime, db, fake, provider, cell: str, reply: str
) -> None:
    """The stock-trading kit asks for JSON: a reply without it (or an empty one) never makes a
    statement. Each statement's calls stay within its attempts; the debate FAILS naming the
    round and agent instead of waiting for ever."""
    provider.reply = reply
    db.document(f"debates/{cell}").set(_settings("stock_trading", "stock_trading"))
    s = _terminal(runtime, db, cell)
    _failed_by(s, "round L1-C")
    calls = _calls(fake)
    print(f"cell {cell} (reply {reply!r}): {calls} model calls, {_logged(db, cell)} logged")
    assert calls <= ATTEMPTS * PER_ATTEMPT * LEAVES
    assert calls == _logged(db, cell) == s.model_calls
    assert s.statements == []
    _quiet_ticks(runtime, db, cell, fake)


def test_a_debate_whose_creation_event_was_lost_is_started_by_the_watchdog(
    runtime, db, fake, provider
) -> None:
    lost = threading.Event()

    def first_start(delivery) -> bool:
        if delivery.function == "onDebateWritten" and not lost.is_set():
            lost.set()
            return True
        return False

    losing = Losing(first_start)
    with runtime.delivery_policy(losing):
        db.document("debates/e").set(_settings())
        runtime.wait_until_idle(timeout=60)
    assert [d.function for d in losing.lost] == ["onDebateWritten"]
    assert debate_state.read(db, "e").debate.status == ""  # nothing ran
    s = _terminal(runtime, db, "e", tick=True)
    assert s.done, s.progress()
    calls = _calls(fake)
    print(f"cell e (first event lost): {calls} model calls")
    assert calls == UNITS == _logged(db, "e") == s.model_calls
    assert s.errors == []


OUTAGE_S = 20.0


def test_a_provider_answering_503_for_20_s_fails_the_debate_then_a_touch_finishes_it(
    runtime, db, fake, provider
) -> None:
    """Each statement retries the outage within its budget (attempts x provider attempts),
    then the debate FAILS naming the 503; once the provider is back, a touch finishes it."""
    provider.outage_until = time.monotonic() + OUTAGE_S
    db.document("debates/f").set(_settings())
    s = _terminal(runtime, db, "f")
    _failed_by(s, "503")
    during = _calls(fake)
    print(f"cell f (503 for {OUTAGE_S:.0f} s): {during} model calls until FAILED")
    assert during <= ATTEMPTS * PROVIDER_ATTEMPTS * LEAVES
    assert during == _logged(db, "f")
    _quiet_ticks(runtime, db, "f", fake)

    time.sleep(max(0.0, provider.outage_until - time.monotonic()))
    db.document("debates/f").update({"touchedBy": "researcher"})
    s = _terminal(runtime, db, "f", tick=True)
    assert s.done and s.debate.failure is None, s.progress()
    assert _calls(fake) == during + UNITS == _logged(db, "f")
