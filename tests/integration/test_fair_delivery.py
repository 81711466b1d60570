"""One experiment's burst of writes does not hold a second experiment's agents until it is over
(issue 40 row 4): while an experiment at the stage limit, written through ``POST
/v1/experiments``, has its trigger events delivered, the agents of an experiment already running
keep moving, and finish.

Where a burst waits locally: the Firestore emulator sends its trigger events one at a time, in
the order of the writes (docs/API.md, "One experiment's work and the others'"), so an agent's
move waits for the events written before it, not for the whole burst: a burst is bounded by the
API's limits. The runtime's own queue is not where it waits (each delivery's ``queued_ms`` is
printed with the figures for bench/RESULTS.md).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from crashing import wait_for
from experiment_state import all_succeeded, demo_without_chats, template
from test_rest_api import DlClient

from emulator.delivery import Delivery
from functions import api_keys
from functions.api import limits
from tools.load_template import load

pytestmark = pytest.mark.emulator

PERSONAS = 10
"""Personas of the large experiment, each with a prompt for every stage: 1,000 prompt documents
(the body stays far under the body limit; 50 personas, the limit, would only be slower)."""
FINISH_S = 120.0


def _large_template(stages: int) -> dict[str, Any]:
    demo = template("demo_all_stages.json")
    info = next(s for s in demo["stageConfigs"] if s["kind"] == "info")
    configs = [{**info, "id": f"s{i}"} for i in range(stages)]
    prompt = {"type": "info", "prompt": [{"type": "TEXT", "text": "Read it."}]}
    personas = [
        {
            "persona": {"id": f"p{k}", "name": f"P{k}"},
            "promptMap": {s["id"]: {**prompt, "id": s["id"]} for s in configs},
        }
        for k in range(PERSONAS)
    ]
    experiment = {**demo["experiment"], "id": "large", "stageIds": [s["id"] for s in configs]}
    return {
        "experiment": experiment,
        "stageConfigs": configs,
        "agentParticipants": personas,
        "agentMediators": [],
    }


def test_a_second_experiments_agents_move_while_one_at_the_stage_limit_is_written(
    db: Any, runtime: Any
) -> None:
    client = DlClient(runtime.http_url("api") + "/v1", api_keys.create("fair@example.com", "t")[0])
    body = {"template": _large_template(limits.ApiSettings().api_max_stages)}
    arrived: list[tuple[float, str]] = []

    def seen(delivery: Delivery) -> None:
        arrived.append((time.monotonic(), delivery.subject))

    with runtime.observing(seen):
        small = load(db, demo_without_chats(), agents=3, api_type="SCRIPTED", seed=0)
        posted = client.post("/experiments", body)
        assert posted.status_code == 201, posted.text
        wait_for(all_succeeded(db, small.experiment_id), FINISH_S, "the second experiment done")
        runtime.wait_until_idle(timeout=FINISH_S)
    large = [t for t, subject in arrived if subject.startswith("experiments/large/")]
    moves = [
        t
        for t, subject in arrived
        if subject.startswith(f"experiments/{small.experiment_id}/participants/")
    ]
    during = [t for t in moves if large[0] < t < large[-1]]
    records = runtime.deliveries
    waited = max(r.queued_ms for r in records if small.experiment_id in r.subject)
    print(
        f"fair: {len(large)} events of the large experiment over {large[-1] - large[0]:.1f} s; "
        f"the second's {len(moves)} participant events, {len(during)} of them during it, the "
        f"longest gap {max(b - a for a, b in itertools.pairwise(moves)):.1f} s; "
        f"its longest wait in the runtime's queue {waited:.0f} ms"
    )
    assert len(large) > len(body["template"]["experiment"]["stageIds"]) * PERSONAS
    assert during, "the second experiment's agents did not move while the large one's events came"
