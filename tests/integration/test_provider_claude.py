"""Deliberate Lab agents on CLAUDE end to end: the real client (the anthropic SDK) against a local
fake of the Messages API, on the emulators: rate limits and overloads retried, a wrong answer
corrected in the conversation, every attempt in the run's totals, a wrong key recorded once."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from experiment_state import doc, errors, model_logs, participant
from raw_docs import SURVEY_QUESTIONS as QUESTIONS
from raw_docs import agent, stage, write_experiment

from functions import spend
from shared.llm.scripted import generate_value
from shared.models import ParticipantStatus, SurveyStageAnswer
from tests.fakes import Recorded, Step
from tests.fakes import fake_anthropic as claude

KEY = "sk-ant-test"
CREATOR = "x@y.z"  # raw_docs' experiment creator
MODEL = "claude-haiku-4-5-20251001"  # DL's default Claude model


def _valid_claude(request: Recorded) -> Step:
    """The response tool called with a value valid for the schema the request carries."""
    schema = request.body["tools"][0]["input_schema"]
    return claude.tool_use(generate_value(random.Random(len(str(request.body))), schema))


@pytest.fixture
def fake_claude(db, monkeypatch) -> Iterator[claude.FakeAnthropic]:
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.05")
    with claude.FakeAnthropic(api_key=KEY) as fake:
        fake.responder = _valid_claude
        db.document(f"experimenterData/{CREATOR}").set(
            {"id": CREATOR, "apiKeys": {"claudeApiKey": {"apiKey": KEY, "baseUrl": fake.base_url}}}
        )
        yield fake


def _claude_agent(db, e: str) -> str:
    config = {
        "agentId": "",
        "promptContext": "A curious resident.",
        "modelSettings": {"apiType": "CLAUDE", "modelName": MODEL},
    }
    return agent(db, e, "survey", api_type="CLAUDE", agentConfig=config)


def _survey_experiment(db) -> str:
    return write_experiment(
        db, [stage("survey", "survey", questions=QUESTIONS), stage("end", "info")]
    )


def test_an_agent_on_claude_answers_through_rate_limits_overload_and_a_wrong_answer(
    runtime, db, fake_claude
):
    fake_claude.push(
        claude.rate_limited(retry_after=1),
        claude.overloaded(),
        claude.tool_use({"why": "too short", "pick": "c", "rate": 9}),  # violates the stage
    )
    e = _survey_experiment(db)
    pid = _claude_agent(db, e)
    runtime.wait_until_idle(timeout=120)

    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    answer = SurveyStageAnswer.model_validate(
        doc(db, f"experiments/{e}/participants/{pid}/stageData/survey")
    )
    assert answer.answer_map["pick"].choice_id in {"a", "b"}
    assert 1 <= answer.answer_map["rate"].value <= 5

    logs = sorted(model_logs(db, e), key=lambda log: log.attempt)
    assert [log.response.status for log in logs] == [
        "QUOTA_ERROR",
        "PROVIDER_UNAVAILABLE_ERROR",
        "INVALID_RESPONSE",
        "OK",
    ]
    assert all(log.api_type == "CLAUDE" and log.model_name == MODEL for log in logs)
    # every attempt counted, none retried behind our back by the SDK
    totals = spend.totals(f"experiments/{e}")
    assert totals.calls == len(fake_claude.requests) == len(logs) == 4
    assert totals.prompt_tokens == sum(log.response.usage.prompt_tokens for log in logs)
    assert errors(db, e) == []

    first, last = fake_claude.requests[0], fake_claude.requests[-1]
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fake_claude.requests)
    tool = first.body["tools"][0]
    assert tool["input_schema"]["properties"]["rate"]["maximum"] == 5
    assert first.body["tool_choice"] == {"type": "tool", "name": "response"}
    assert first.body["model"] == MODEL
    # the rejected answer and the reason went back as conversation turns
    turns = last.body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert json.loads(turns[1]["content"])["rate"] == 9
    assert "at least 10 are needed" in turns[2]["content"]


def test_thinking_settings_reach_claude(runtime, db, fake_claude):
    """An agent prompt's generationConfig (DL's reasoningBudget and providerOptions) reaches
    the request: thinking on with its budget, the tool offered, prompt caching on."""
    fake_claude.responder = lambda request: claude.text(
        json.dumps(generate_value(random.Random(1), request.body["tools"][0]["input_schema"])),
        thought="Let me weigh a and b.",
    )
    e = _survey_experiment(db)
    base = f"experiments/{e}/agentParticipants/resident"
    db.document(base).set({"id": "resident", "name": "Resident"})
    db.document(f"{base}/prompts/survey").set(
        {
            "id": "survey",
            "type": "survey",
            "prompt": [{"type": "STAGE_CONTEXT", "stageId": ""}],
            "generationConfig": {
                "reasoningBudget": 2048,
                "maxTokens": 1000,
                "temperature": 0.7,
                "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}},
            },
        }
    )
    config = {"agentId": "resident", "modelSettings": {"apiType": "CLAUDE", "modelName": MODEL}}
    pid = agent(db, e, "survey", api_type="CLAUDE", agentConfig=config)
    runtime.wait_until_idle(timeout=60)

    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    (request,) = fake_claude.requests
    body = request.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 1000 + 2048
    assert body["tool_choice"] == {"type": "auto"}
    assert body["cache_control"] == {"type": "ephemeral"}
    assert "temperature" not in body  # refused by the API since 2026-10-21
    (log,) = model_logs(db, e)
    assert "[THOUGHT SIGNATURE]" in (log.response.raw_response or "")


def test_a_wrong_claude_key_is_recorded_once(runtime, db, fake_claude):
    db.document(f"experimenterData/{CREATOR}").set(
        {"apiKeys": {"claudeApiKey": {"apiKey": "sk-ant-wrong", "baseUrl": fake_claude.base_url}}}
    )
    e = _survey_experiment(db)
    pid = _claude_agent(db, e)
    runtime.wait_until_idle(timeout=60)
    (record,) = errors(db, e)
    assert "AUTHENTICATION_ERROR" in record.reason
    assert len(fake_claude.requests) == 1
    assert participant(db, e, pid).current_stage_id == "survey"
