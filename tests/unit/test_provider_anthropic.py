"""ClaudeClient (CLAUDE) through the anthropic SDK against a local fake of the Messages API."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import tenacity

from shared.llm.base import MAX_RAW_CHARS, Credentials, Message, ModelError, ModelRequest
from shared.llm.claude import DEFAULT_MAX_TOKENS, ClaudeClient
from shared.llm.providers import client_for, registered
from shared.llm.retry import remaining, retrying
from tests.fakes import Step, json_step, malformed, slow
from tests.fakes import fake_anthropic as a
from tests.fakes.fake_anthropic import FakeAnthropic

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["a", "b"]}},
    "required": ["answer"],
}
KEY = "sk-ant-test"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as server:
        yield server


def request(fake: FakeAnthropic, **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "prompt": "Pick a or b.",
        "response_schema": SCHEMA,
        "model_name": "claude-haiku-4-5",
        "seed": "agent:stage:1",
        "credentials": Credentials(api_key=KEY, base_url=fake.base_url),
        "timeout_s": 5.0,
    }
    fields.update(overrides)
    return ModelRequest(**fields)


def sent(fake: FakeAnthropic) -> dict[str, Any]:
    assert fake.requests, "no request reached the fake"
    body = fake.requests[-1].body
    assert isinstance(body, dict)
    return body


def generate(fake: FakeAnthropic, **overrides: Any) -> str:
    return ClaudeClient().generate(request(fake, **overrides)).text


# --- request mapping ---------------------------------------------------------------------------


def test_conversation_system_schema_and_key_go_over_the_wire(fake: FakeAnthropic) -> None:
    fake.push(a.tool_use({"answer": "a"}))
    history = (Message("assistant", '{"answer": "c"}'), Message("user", "c is not allowed"))
    generate(fake, history=history, system="You are a careful voter.")
    rec = fake.requests[-1]
    assert rec.path == "/v1/messages"
    assert rec.headers["authorization"] == f"Bearer {KEY}"
    assert rec.headers["anthropic-version"]
    assert rec.headers["x-stainless-retry-count"] == "0"  # the SDK's own retries are off
    body = rec.body
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == "You are a careful voter."
    assert body["messages"] == [
        {"role": "user", "content": "Pick a or b."},
        {"role": "assistant", "content": '{"answer": "c"}'},
        {"role": "user", "content": "c is not allowed"},
    ]
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS  # required by the API
    (tool,) = body["tools"]
    assert tool["name"] == "response" and tool["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "response"}


def test_free_text_and_empty_config_send_only_what_is_required(fake: FakeAnthropic) -> None:
    cfg = {"stopSequences": [], "reasoningLevel": "off", "includeReasoning": False}
    generate(fake, response_schema=None, generation_config=cfg)
    assert set(sent(fake)) == {"model", "max_tokens", "messages"}


def test_sampling_parameters_are_not_sent_since_api_2026_10_21(fake: FakeAnthropic) -> None:
    """The fake refuses temperature/top_p/top_k with a 400, as the API does."""
    cfg = {"temperature": 0.2, "topP": 0.9, "maxTokens": 300, "stopSequences": ["END"]}
    generate(fake, generation_config=cfg)
    body = sent(fake)
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert body["max_tokens"] == 300 and body["stop_sequences"] == ["END"]


def test_an_empty_turn_becomes_a_space(fake: FakeAnthropic) -> None:
    generate(fake, history=(Message("assistant", ""), Message("user", "again")))
    assert sent(fake)["messages"][1] == {"role": "assistant", "content": " "}


def test_a_schema_that_is_not_an_object_is_asked_in_the_prompt_only(fake: FakeAnthropic) -> None:
    generate(fake, response_schema={"type": "array", "items": {"type": "string"}})
    assert "tools" not in sent(fake)


def _on(budget: int) -> dict[str, Any]:
    return {"type": "enabled", "budget_tokens": budget}


def _options(**anthropic: Any) -> dict[str, Any]:
    return {"providerOptions": {"anthropic": anthropic}}


MAX = DEFAULT_MAX_TOKENS


@pytest.mark.parametrize(
    ("cfg", "thinking", "max_tokens", "effort"),
    [
        ({"reasoningBudget": 2048}, _on(2048), MAX + 2048, None),
        ({"reasoningBudget": 100}, _on(1024), MAX + 1024, None),  # the API's minimum
        ({"includeReasoning": True, "maxTokens": 500}, _on(1024), 500 + 1024, None),
        ({"reasoningLevel": "high"}, _on(1024), MAX + 1024, "high"),
        ({"reasoningLevel": "minimal"}, _on(1024), MAX + 1024, None),
        (
            {
                "reasoningBudget": 2048,
                **_options(thinking={"type": "enabled", "budgetTokens": 4096}),
            },
            _on(4096),
            MAX + 4096,
            None,
        ),
        (_options(thinking={"type": "adaptive"}, effort="low"), {"type": "adaptive"}, MAX, "low"),
    ],
)
def test_thinking_and_effort_follow_deliberate_labs_mapping(
    fake: FakeAnthropic,
    cfg: dict[str, Any],
    thinking: dict[str, Any],
    max_tokens: int,
    effort: str | None,
) -> None:
    fake.push(a.text('{"answer": "b"}', thought="Let me think."))
    assert generate(fake, generation_config=cfg) == '{"answer": "b"}'  # thoughts left out
    body = sent(fake)
    assert body["thinking"] == thinking
    assert body["max_tokens"] == max_tokens  # the budget comes on top of the answer's allowance
    assert body.get("output_config") == ({"effort": effort} if effort else None)
    # a forced tool is refused with thinking on (the fake answers 400 as the API does)
    assert body["tool_choice"] == {"type": "auto"}


def test_thinking_can_be_turned_off_by_the_provider_options(fake: FakeAnthropic) -> None:
    cfg = {"reasoningBudget": 2048, **_options(thinking={"type": "disabled"})}
    generate(fake, generation_config=cfg)
    body = sent(fake)
    assert body["thinking"] == {"type": "disabled"} and body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["tool_choice"] == {"type": "tool", "name": "response"}


@pytest.mark.parametrize(
    ("cache", "expected"),
    [
        ({"type": "ephemeral"}, {"type": "ephemeral"}),
        ({"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral", "ttl": "1h"}),
        ({"type": "persistent"}, None),
    ],
)
def test_cache_control_turns_on_prompt_caching(
    fake: FakeAnthropic, cache: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    generate(fake, generation_config=_options(cacheControl=cache))
    assert sent(fake).get("cache_control") == expected


# --- replies ------------------------------------------------------------------------------------


def test_the_tool_input_is_the_answer_with_usage_and_sanitized_raw(fake: FakeAnthropic) -> None:
    fake.push(
        a.tool_use(
            {"answer": "b"},
            thought="b is better",
            input_tokens=21,
            output_tokens=4,
            cache_read=100,
            cache_write=5,
        )
    )
    reply = ClaudeClient().generate(request(fake))
    assert json.loads(reply.text) == {"answer": "b"}
    # cached input was sent too: it counts in the prompt tokens
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (126, 4)
    raw = json.loads(reply.raw or "")
    assert raw["id"] == "msg_fake"
    assert raw["content"][0]["signature"] == "[THOUGHT SIGNATURE]"


def test_a_text_answer_is_returned_when_the_tool_was_not_called(fake: FakeAnthropic) -> None:
    fake.push(a.text('Here: {"answer": "a"}'))
    assert generate(fake) == 'Here: {"answer": "a"}'  # for the caller's JSON repair to judge


def test_another_tool_is_not_the_answer(fake: FakeAnthropic) -> None:
    fake.push(a.tool_use({"q": "x"}, name="web_search"))
    assert generate(fake) == ""


def test_raw_is_truncated(fake: FakeAnthropic) -> None:
    fake.push(a.text("x" * (MAX_RAW_CHARS * 2)))
    reply = ClaudeClient().generate(request(fake))
    assert len(reply.text) == MAX_RAW_CHARS * 2
    assert reply.raw is not None and len(reply.raw) < MAX_RAW_CHARS + 20


def test_truncated_text_is_returned(fake: FakeAnthropic) -> None:
    fake.push(a.text('{"ans', stop_reason="max_tokens"))
    assert generate(fake) == '{"ans'


# --- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "status", "retryable"),
    [
        (a.rate_limited(), "QUOTA_ERROR", True),
        (a.overloaded(), "PROVIDER_UNAVAILABLE_ERROR", True),
        (a.error(500, "Internal server error"), "PROVIDER_UNAVAILABLE_ERROR", True),
        (a.error(504, "Request timed out"), "PROVIDER_UNAVAILABLE_ERROR", True),
        (
            Step(502, b"<html>Bad gateway</html>", content_type="text/html"),
            "PROVIDER_UNAVAILABLE_ERROR",
            True,
        ),
        (a.error(400, "max_tokens: 100000 > 64000, the maximum"), "CONFIG_ERROR", False),
        (a.error(404, "model: claude-9"), "CONFIG_ERROR", False),
        (a.error(401, "invalid x-api-key"), "AUTHENTICATION_ERROR", False),
        (a.error(403, "Your API key does not have permission"), "AUTHENTICATION_ERROR", False),
        (a.error(402, "Your credit balance is too low"), "QUOTA_ERROR", False),
        (malformed(), "PROVIDER_UNAVAILABLE_ERROR", True),
        (
            json_step({"type": "error", "error": {"type": "overloaded_error"}}),
            "PROVIDER_UNAVAILABLE_ERROR",
            True,
        ),
        (json_step({"type": "message", "role": "assistant"}), "PROVIDER_UNAVAILABLE_ERROR", True),
        (a.refusal(), "REFUSAL_ERROR", False),
        (a.length_empty(), "LENGTH_ERROR", False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_fault_maps_to_status_and_retryability(
    fake: FakeAnthropic, step: Step, status: str, retryable: bool
) -> None:
    fake.push(step)
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(request(fake))
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert len(fake.requests) == 1  # the SDK did not retry on its own


def test_a_rate_limit_says_how_long_to_wait(fake: FakeAnthropic) -> None:
    fake.push(a.rate_limited(retry_after=7))
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(request(fake))
    assert info.value.retry_after_s == 7.0 and info.value.http_status == 429
    assert "rate limit" in str(info.value) and "rate_limit_error" in (info.value.raw or "")


def test_an_error_message_comes_from_the_error_envelope(fake: FakeAnthropic) -> None:
    fake.push(a.error(400, "tools.0.custom.input_schema: JSON schema is invalid"))
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(request(fake))
    assert "input_schema: JSON schema is invalid" in str(info.value)
    assert info.value.http_status == 400 and "invalid_request_error" in (info.value.raw or "")


def test_wrong_key_is_an_authentication_error(fake: FakeAnthropic) -> None:
    creds = Credentials(api_key="sk-ant-wrong", base_url=fake.base_url)
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(request(fake, credentials=creds))
    assert info.value.status == "AUTHENTICATION_ERROR"


def test_timeout_is_honoured(fake: FakeAnthropic) -> None:
    fake.push(slow(a.text("late"), 60.0))  # the fake wakes it at close
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(request(fake, timeout_s=0.3))
    assert time.monotonic() - started < 15.0  # far below the reply's 60 s, even on a loaded machine
    assert (info.value.status, info.value.retryable) == ("PROVIDER_UNAVAILABLE_ERROR", True)


def test_connection_refused_is_retryable() -> None:
    with FakeAnthropic() as closed:
        url = closed.base_url
    req = ModelRequest("hi", None, "m", "s", credentials=Credentials(KEY, url), timeout_s=2.0)
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(req)
    assert (info.value.status, info.value.retryable) == ("PROVIDER_UNAVAILABLE_ERROR", True)


@pytest.mark.parametrize("creds", [Credentials(KEY, "localhost:1234"), Credentials(None, None)])
def test_a_bad_base_url_or_no_key_is_a_config_error(creds: Credentials) -> None:
    req = ModelRequest("hi", None, "m", "s", credentials=creds)
    with pytest.raises(ModelError) as info:
        ClaudeClient().generate(req)
    assert (info.value.status, info.value.retryable) == ("CONFIG_ERROR", False)


def test_the_sdk_takes_no_key_or_url_from_the_environment(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "deployment-token")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    generate(fake)
    assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"


# --- with the retry loop ------------------------------------------------------------------------


def test_retry_loop_honours_retry_after_then_succeeds(fake: FakeAnthropic) -> None:
    """429 (retry-after 7 s), 529, then an answer: three attempts, each seen by our loop (one
    request each: the SDK retries nothing), and the wait after the 429 is the provider's."""
    fake.push(a.rate_limited(retry_after=7), a.overloaded(), a.tool_use({"answer": "a"}))
    req, log, slept = request(fake), [], []
    deadline = time.monotonic() + 60
    for attempt in retrying(deadline, wait=tenacity.wait_none(), sleep=slept.append):
        with attempt:
            timeout = remaining(deadline, cap=req.timeout_s)
            try:
                reply = ClaudeClient().generate(dataclasses.replace(req, timeout_s=timeout))
            except ModelError as error:
                log.append(error.status)
                raise
    assert json.loads(reply.text) == {"answer": "a"}
    assert log == ["QUOTA_ERROR", "PROVIDER_UNAVAILABLE_ERROR"]
    assert slept == [7.0, 0.0]
    assert len(fake.requests) == 3


# --- registration -------------------------------------------------------------------------------


def test_claude_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE", raising=False)
    assert "CLAUDE" in registered()
    assert isinstance(client_for("CLAUDE"), ClaudeClient)
