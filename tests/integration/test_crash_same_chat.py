"""Killed runtimes do not change a claim chat: the demo experiment (every stage kind, a group chat
with a mediator, here in one thread) under the **claim** election policy, 5 agents, run calm and
then again with the same ids while the runtime is SIGKILLed at random moments (the emulators kept,
a restart after each kill, the last one ``DLAB_CRASH_GAP`` seconds after its kill, as in
``test_crash``). Every agent reaches SUCCESS, the chat says what the calm run's said (the same
authors and texts in the same order; departure notices as a set, their places are timing), and
the model provider was asked as often as in the calm run: no lost turn costs a call, and no
readiness question comes that the calm run did not ask (docs/WORK.md, "The same seed, the same
run"). Counted at the provider (``DLAB_CRASH_REQUESTS``), so a request whose reply died with
its runtime counts too.

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


def _wait_done(db: firestore.Client, e: str, runtime) -> None:
    deadline = time.monotonic() + DONE_S
    try:
        while not all_done(db, e) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        kill_runtime(runtime)
    stuck = {p.private_id: p.current_stage_id for p in participants(db, e)}
    assert all_done(db, e), stuck


def _requests(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


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
    _wait_done(db, e, runtime)
    calm = _said(db, e, chats)

    FirestoreAdmin(f"127.0.0.1:{emulators.firestore}", PROJECT).reset()
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
    _wait_done(db, e, runtime)
    killed = _said(db, e, chats)

    both = f"calm:\n{_lines(calm)}\nkilled:\n{_lines(killed)}"
    print(
        f"crash, claim chat: {_requests(calm_requests)} provider requests calm, "
        f"{_requests(killed_requests)} with {kills} kills; {len(_conversation(calm))} messages"
    )
    assert _conversation(killed) == _conversation(calm), both
    assert Counter(killed) == Counter(calm), both  # the same departures
    assert len({m[1] for m in _conversation(calm)}) >= 3, both  # the mediator and 2 agents
    assert _requests(killed_requests) == _requests(calm_requests) > 0
    gave_up = [r.reason for r in errors(db, e) if "gave up" in r.reason]
    assert not gave_up, gave_up


def _lines(said: list[Said]) -> str:
    return "\n".join(
        f"{i:2} {kind:11} {author[:8]}: {text[:50]!r}"
        for i, (kind, author, text) in enumerate(said)
    )
