"""Issue 28 row 14: many participants written at once. A watchdog tick reads a bounded number of
them (``DLAB_WATCHDOG_MAX_READS``), experiments are served fairly, and a cursor reaches every
agent over successive ticks."""

from __future__ import annotations

import base64
import json
import math

import pytest
from delivery_policies import Losing
from experiment_state import participant
from raw_docs import stage, write_experiment

from emulator.delivery import Delivery
from shared.models import ParticipantStatus

pytestmark = pytest.mark.usefixtures("clean")

BIG = 600
READS = 100
"""``DLAB_WATCHDOG_MAX_READS`` here: a sixth of the big experiment's agents per tick."""
STAGES = 6


def _woken(delivery: Delivery) -> tuple[str, str] | None:
    """(experiment, participant) of an agent-wake delivery."""
    if delivery.function != "onAgentWake":
        return None
    data = json.loads(base64.b64decode(json.loads(delivery.body)["message"]["data"]))
    return data["experimentId"], data["participantId"]


def _agents(db, e: str, count: int, first_stage: str) -> list[str]:
    """``count`` agent participants at ``first_stage``, written in batches (as an import would)."""
    ids = [f"agent-{i:04d}" for i in range(count)]
    for start in range(0, count, 400):
        batch = db.batch()
        for private_id in ids[start : start + 400]:
            batch.set(
                db.document(f"experiments/{e}/participants/{private_id}"),
                {
                    "privateId": private_id,
                    "publicId": private_id,
                    "currentStageId": first_stage,
                    "currentCohortId": "cohort-a",
                    "currentStatus": "IN_PROGRESS",
                    "timestamps": {"completedStages": {}, "readyStages": {}},
                    "agentConfig": {"agentId": "", "modelSettings": {"apiType": "SCRIPTED"}},
                },
            )
        batch.commit()
    return ids


def test_a_tick_reads_a_bounded_share_and_a_small_experiment_moves_on_every_tick(
    runtime, db, monkeypatch
):
    """600 stalled agents in one experiment (their events lost, their wakes too, so they stay
    stalled) and a 2-agent experiment whose agents move only when the watchdog wakes them (their
    own update events lost). With 100 reads a tick: no tick wakes more than 100 agents, the
    small experiment moves one stage on every tick, and every big experiment's agent is woken
    within the ticks its share needs. Before: every tick read and woke all 600 (reading each
    one's lease in turn: 9-12 s a tick at 10,000)."""
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "0")
    monkeypatch.setenv("DLAB_WATCHDOG_MAX_READS", str(READS))
    big = write_experiment(db, [stage("wait", "info"), stage("end", "info")])
    small = write_experiment(db, [stage(f"s{i}", "info") for i in range(1, STAGES + 1)])
    woken: list[tuple[str, str]] = []

    def lose(delivery: Delivery) -> bool:
        who = _woken(delivery)
        if who is not None:
            woken.append(who)
            return who[0] == big  # the big experiment's agents stay stalled
        return delivery.function.startswith("onParticipant")  # nobody moves on its own

    with runtime.delivery_policy(Losing(lose)):
        many = _agents(db, big, BIG, "wait")
        pair = _agents(db, small, 2, "s1")
        runtime.wait_until_idle(timeout=60)
        woken.clear()
        ticks = math.ceil(BIG / (READS // 2 - 2)) + 1  # the big one's share is at least half
        for tick in range(1, ticks + 1):
            before = len(woken)
            runtime.tick()
            runtime.wait_until_idle(timeout=60)
            this_tick = woken[before:]
            assert len(this_tick) <= READS, f"tick {tick} woke {len(this_tick)}"
            stages = {participant(db, small, p).current_stage_id for p in pair}
            done = all(
                participant(db, small, p).current_status == ParticipantStatus.SUCCESS for p in pair
            )
            assert done or stages == {f"s{tick + 1}"}, f"tick {tick}: the pair is at {stages}"
    reached = {p for e, p in woken if e == big}
    print(f"{ticks} ticks: {len(reached)} of {BIG} reached, at most {READS} woken a tick")
    assert reached == set(many)
