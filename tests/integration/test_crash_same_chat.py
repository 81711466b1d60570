"""Killed runtimes do not change a claim chat: the demo experiment (every stage kind, a group chat
with a mediator, here in one thread) under the **claim** election policy, 5 agents, run calm and
then again with the same ids while the runtime is SIGKILLed at random moments (the emulators kept,
a restart after each kill, the last one ``DLAB_CRASH_GAP`` seconds after its kill, as in
``test_crash``). Every agent reaches SUCCESS, the chat says what the calm run's said (the same
authors and texts in the same order; departure notices as a set, their places are timing), and
no lost turn costs a call the calm run did not make, nor a readiness question it did not ask
(docs/WORK.md, "The same seed, the same run"). Requests are counted at the provider
(``DLAB_CRASH_REQUESTS``), by their seeds: the killed run asks for exactly the calm run's
calls; one whose reply died with its runtime before the commit that records it (a kill in that
window: wider on a busy machine) is asked again, and the test prints how many were.

Kills: ``DLAB_CRASH_KILLS`` (default 10), seeds: ``DLAB_CRASH_SEEDS`` (default ``7``), as
``test_crash``."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from chat_docs import chat_messages
from crashing import (  # noqa: F401 (emulators: a fixture)
    PROJECT,
    all_done,
    emulators,
    environment,
    forget_messages,
    kill_runtime,
    start_runtime,
)
from experiment_state import errors, participants, template
from google.cloud import firestore

from emulator.firestore_admin import FirestoreAdmin
from tools.load_template import load
from tools.replay import runs

AGENTS = 5
SEEDS = [int(s) for s in os.environ.get("DLAB_CRASH_SEEDS", "7").split(",")]
DONE_S = float(os.environ.get("DLAB_CRASH_DEADLINE", "300"))
SETTLED_S = 10.0
"""A chat unchanged this long after every agent finished has settled."""

Said = tuple[str, str, str]
"""A chat message as compared: type, author, text."""


def _to_claim(db: firestore.Client, e: str, chats: list[tuple[str, str]]) -> None:
    """The chat under the claim policy (a setting of ours, which DL's template schema lacks),
    in one thread, set before the agents come to it (they answer eight stages first). Threads
    are left out: the thread moves when the last agent's readiness, written after its reply,
    reaches the public data through a trigger of its own, which races the next agent's reply
    to that message even in a calm run (docs/WORK.md)."""
    for stage, _ in chats:
        db.document(f"experiments/{e}/stages/{stage}").update(
            {"electionPolicy": "claim", "discussions": []}
        )


def _said(db: firestore.Client, e: str, chats: list[tuple[str, str]]) -> list[Said]:
    return [
        (m["type"], m.get("senderId") or "", m["message"])
        for stage, cohort in chats
        for m in chat_messages(db, e, stage_id=stage, cohort=cohort)
    ]


def _conversation(said: list[Said]) -> list[Said]:
    """What the agents said, in order (a departure notice lands when its leave commits)."""
    return [m for m in said if m[0] != "system"]


def _wait_done(db: firestore.Client, e: str, runtime, chats: list[tuple[str, str]]) -> None:
    """Every agent finished, and then the chat settled: a mediator may still answer the last
    agent's message after it left (the runtime is stopped only once the chat has not changed
    for ``SETTLED_S``)."""
    deadline = time.monotonic() + DONE_S
    try:
        while not all_done(db, e) and time.monotonic() < deadline:
            time.sleep(1)
        said, since = _said(db, e, chats), time.monotonic()
        while time.monotonic() - since < SETTLED_S and time.monotonic() < deadline:
            time.sleep(1)
            if (now := _said(db, e, chats)) != said:
                said, since = now, time.monotonic()
    finally:
        kill_runtime(runtime)
    stuck = {p.private_id: p.current_stage_id for p in participants(db, e)}
    assert all_done(db, e), stuck


def _requests(path: Path) -> list[str]:
    """The provider requests made, by their seeds (who asked, where, for what)."""
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.skipif(
    not os.environ.get("DLAB_CRASH_CHAT"),
    reason="not in the suite until it holds under load: with both cores busy the killed run's "
    "chat diverged from the calm run's (2 of 2 runs, 2026-11-28; issue 37 open); "
    "DLAB_CRASH_CHAT=1 runs it",
)
@pytest.mark.parametrize("seed", SEEDS)
def test_killed_runtimes_leave_a_claim_chat_as_the_calm_run_left_it(
    emulators,  # noqa: F811
    monkeypatch,
    tmp_path,
    seed,
):
    kills = int(os.environ.get("DLAB_CRASH_KILLS", "10"))
    gap = float(os.environ.get("DLAB_CRASH_GAP", "26"))
    rng = random.Random(seed)
    for name, value in environment(emulators).items():
        monkeypatch.setenv(name, value)
    db = firestore.Client(project=PROJECT)
    demo = template("demo_all_stages.json")

    calm_requests = tmp_path / "calm"
    monkeypatch.setenv("DLAB_CRASH_REQUESTS", str(calm_requests))
    runtime = start_runtime(emulators)
    loaded = load(db, demo, agents=AGENTS, api_type="SCRIPTED", seed=0)
    e = loaded.experiment_id
    chats = [(s["id"], loaded.cohort_id) for s in demo["stageConfigs"] if s["kind"] == "chat"]
    _to_claim(db, e, chats)
    starts = runs.kind_of(f"experiments/{e}").starts(db, f"experiments/{e}")
    _wait_done(db, e, runtime, chats)
    calm = _said(db, e, chats)

    FirestoreAdmin(f"127.0.0.1:{emulators.firestore}", PROJECT).reset()
    forget_messages(emulators)  # the calm run's unacknowledged tail must not reach this run
    killed_requests = tmp_path / "killed"
    monkeypatch.setenv("DLAB_CRASH_REQUESTS", str(killed_requests))
    runtime = start_runtime(emulators)
    batch = db.batch()
    for path, data in starts.items():
        batch.set(db.document(path), data)
    batch.commit()
    for n in range(kills):
        time.sleep(rng.uniform(0.3, 4.0))
        kill_runtime(runtime)
        if n == kills - 1:
            time.sleep(gap)
        runtime = start_runtime(emulators)
    _wait_done(db, e, runtime, chats)
    killed = _said(db, e, chats)

    both = f"calm:\n{_lines(calm)}\nkilled:\n{_lines(killed)}"
    calm_asked, killed_asked = _requests(calm_requests), _requests(killed_requests)
    again = {seed: n for seed, n in Counter(killed_asked).items() if n > 1}
    print(
        f"crash, claim chat: {len(calm_asked)} provider requests calm, {len(killed_asked)} with "
        f"{kills} kills ({sum(again.values()) - len(again)} made again); "
        f"{len(_conversation(calm))} messages"
    )
    assert _conversation(killed) == _conversation(calm), both
    assert Counter(killed) == Counter(calm), both  # the same departures
    assert len({m[1] for m in _conversation(calm)}) >= 3, both  # the mediator and 2 agents
    # the same logical calls, each once calm; a reply in flight at a kill is asked again
    assert calm_asked and len(set(calm_asked)) == len(calm_asked)
    assert set(killed_asked) == set(calm_asked), set(killed_asked) ^ set(calm_asked)
    gave_up = [r.reason for r in errors(db, e) if "gave up" in r.reason]
    assert not gave_up, gave_up


def _lines(said: list[Said]) -> str:
    return "\n".join(
        f"{i:2} {kind:11} {author[:8]}: {text[:50]!r}"
        for i, (kind, author, text) in enumerate(said)
    )
