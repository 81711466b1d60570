"""Issue 31 item 4: a member's model call is the seed's API call: the base prompt as the system
message, the day's context as the user message, ``max_tokens=500`` and ``temperature=0.7``
(the society settings ``maxTokens`` and ``temperature``), checked on what a fake OpenAI server
received. OpenAI's current name for the seed's ``max_tokens`` is ``max_completion_tokens``
(its reasoning models refuse the old one), which is what our OpenAI provider sends."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from tests.fakes import fake_openai as openai
from tools.society import client

pytestmark = pytest.mark.usefixtures("clean")

AGENTS = 2
BOUND_S = 60.0


@pytest.fixture
def fake(db: firestore.Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[openai.FakeOpenAI]:
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    work = json.dumps({"action": "work", "work_type": "farm", "hours": 2})
    with openai.FakeOpenAI(default=openai.text(work)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_a_members_call_carries_the_seeds_roles_and_generation_settings(db, runtime, fake):
    settings = {"agents": AGENTS, "days": 1, "seed": 1, "apiType": "OPENAI", "modelName": "m"}
    sid = client.create(db, settings)
    deadline = time.monotonic() + BOUND_S
    while client.closed_days(db, sid) < 1:
        assert time.monotonic() < deadline, [(d.day, d.status) for d in client.days(db, sid)]
        runtime.wait_until_idle(timeout=30)
        runtime.tick()
    assert len(fake.requests) == AGENTS
    for request in fake.requests:
        body = request.body
        assert (body["max_completion_tokens"], body["temperature"]) == (500, 0.7), body
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user"], roles
        system, user = (m["content"] for m in body["messages"])
        assert system.startswith("You are Agent #") and "CURRENT STATE" not in system
        assert user.startswith("CURRENT STATE (Day 1)") and "RESPONSE FORMAT" not in user
