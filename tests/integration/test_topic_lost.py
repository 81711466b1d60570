"""A publish that meets its topic gone (the Pub/Sub emulator restarted, issue 40 row 8): it
waits for the runtime to make the topic again and is delivered, with no error and one line.

A restarted Pub/Sub emulator has lost every topic until the runtime's next check (about a
second) makes them again; a publish in between met ``NotFound: 404 Topic not found``, which
went up as the work's failure (a society day's record blamed its member, a debate's the
function). The test takes from the real emulator what a restart takes (this runtime's topics
and subscriptions: the emulators are this test process's own) and publishes at once, before
the runtime can notice.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from emulator.runtime import LocalRuntime
from functions.registry import ScheduleTrigger

pytestmark = [pytest.mark.emulator, pytest.mark.usefixtures("clean")]

SAID = "subscriptions again"
"""The runtime's line when it made its topics and subscriptions again."""


def _call(method: str, url: str) -> dict:
    request = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def _lose_topics(host: str, project: str) -> int:
    """Delete the project's topics and subscriptions, as a restart of the emulator does; how
    many topics were deleted. Topics first: the runtime's check looks for its subscriptions,
    and one made again between the two deletions would find the topics still there, then lose
    them, its subscriptions left on a deleted topic (and the runtime deaf for good)."""
    base = f"http://{host}/v1/projects/{project}"
    topics = _call("GET", f"{base}/topics?pageSize=1000").get("topics", [])
    for t in topics:
        _call("DELETE", f"http://{host}/v1/{t['name']}")
    for s in _call("GET", f"{base}/subscriptions?pageSize=1000").get("subscriptions", []):
        _call("DELETE", f"http://{host}/v1/{s['name']}")
    return len(topics)


def test_a_publish_to_a_lost_topic_waits_for_it_and_is_delivered(runtime: LocalRuntime) -> None:
    scheduled = {s.name for s in runtime.registry if isinstance(s.trigger, ScheduleTrigger)}
    said_before = sum(SAID in n for n in runtime.notices)
    runtime.clear_deliveries()
    assert _lose_topics(runtime.pubsub_host, runtime.project) > 0
    assert runtime.tick() == len(scheduled)  # NotFound before the fix
    runtime.wait_until_idle(timeout=60)
    ran = [(r.function, r.outcome, r.error) for r in runtime.deliveries]
    assert {f for f, outcome, _ in ran if outcome == "ok"} >= scheduled, ran
    assert [r for r in ran if r[1] != "ok"] == [], ran
    assert sum(SAID in n for n in runtime.notices) == said_before + 1, runtime.notices
