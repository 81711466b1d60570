"""A reply that arrived is an answer: a completion whose text is wrong (HTML, empty, no JSON)
goes to the corrective turn with its reason; only a body with no completion in it (an error
envelope with a 200, an outage page in place of the envelope) is a retryable provider fault.

Until issue 27 ``check_protocol`` raised a retryable provider fault for the first kind too, so a
model that kept answering prose was retried as an outage (95 calls for one society member in a
day, no corrective turn, no invalid outcome); these tests now assert the new rule."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from functions.settings import BackboneSettings
from shared.llm import gemini, openai_compat
from shared.llm.base import ModelError
from shared.llm.json_output import parse_json_reply
from shared.llm.policy import CallPolicy, call_policy
from shared.llm.protocol import MAX_REPLY_CHARS, check_reply
from shared.stages import AnswerValidationError


def _reason(text: str, expects_json: bool = True) -> str:
    """What the corrective turn would tell the model (the check, then the default parser)."""
    with pytest.raises(AnswerValidationError) as caught:
        check_reply(text, expects_json)
        if expects_json:
            parse_json_reply(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("  \n", "empty"),
        ("<!DOCTYPE html><html><body>502</body></html>", "HTML"),
        ("<html><body>Service Unavailable</body></html>", "HTML"),
        ("We are down for maintenance.", "not valid JSON"),
        ('{"response": "I think we should', "not valid JSON"),  # a cut-off stream
        ("x" * (MAX_REPLY_CHARS + 1), "keep it under"),
    ],
)
def test_a_completion_that_does_not_parse_is_corrected_with_its_reason(text: str, why: str) -> None:
    assert why in _reason(text)


@pytest.mark.parametrize(
    "text", ['{"why": 3}', "[1, 2, 3]", 'Sure: ```json\n{"a": 1}\n```', '{"a": 1,}']
)
def test_well_formed_json_goes_on_to_validation(text: str) -> None:
    check_reply(text, expects_json=True)  # the model's answer, right or wrong
    parse_json_reply(text)


@pytest.mark.parametrize("text", ["Hello everyone, I agree.", ""])
def test_free_text_is_the_model_s_answer_even_empty(text: str) -> None:
    check_reply(text, expects_json=False)


def test_prose_where_json_was_asked_is_left_to_the_caller_s_parser() -> None:
    """A caller's own ``parse`` may take prose (a society member's forum post)."""
    check_reply("I will post this to the forum.", expects_json=True)


def test_an_html_page_is_no_answer_even_as_free_text() -> None:
    assert "HTML" in _reason("<html><body>502</body></html>", expects_json=False)


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": {"code": 503, "message": "overloaded"}}),
        json.dumps({"status": "ok"}),  # JSON, but no generateContent response
    ],
)
def test_gemini_body_that_is_not_a_response_is_a_provider_fault(body: str) -> None:
    with pytest.raises(ModelError) as caught:
        gemini.parse_response(body)
    assert caught.value.retryable and caught.value.http_status == 200


def test_openai_error_body_with_200_is_a_provider_fault() -> None:
    with pytest.raises(ModelError) as caught:
        openai_compat.parse_response(json.dumps({"error": {"message": "upstream timeout"}}))
    assert caught.value.retryable and "upstream timeout" in str(caught.value)


def test_call_policy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert call_policy() == CallPolicy()
    monkeypatch.setenv("DLAB_MODEL_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("DLAB_MOVE_ON_WITHOUT_ANSWER", "false")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "")  # empty: unset
    policy = call_policy()
    assert policy.max_attempts == 2 and not policy.move_on_without_answer
    assert policy.backoff_max_s == 20.0


def test_a_mistyped_call_setting_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "-1")
    with pytest.raises(ValidationError, match="DLAB_MODEL_BACKOFF_S"):
        CallPolicy()
    with pytest.raises(ModelError, match="DLAB_MODEL_BACKOFF_S='-1'") as caught:
        call_policy()  # what a model call asks for: recorded like any CONFIG_ERROR
    assert caught.value.status == "CONFIG_ERROR" and not caught.value.retryable


def test_spend_and_rate_limit_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BackboneSettings().model_prices == {} and BackboneSettings().rate_limits == {}
    monkeypatch.setenv("DLAB_MODEL_PRICES", '{"m": {"inputPerMTok": 1, "outputPerMTok": 4}}')
    monkeypatch.setenv("DLAB_RATE_LIMITS", '{"OPENAI": {"requestsPerMinute": 1000}}')
    assert BackboneSettings().cost_usd("m", 1_000_000, 500_000) == pytest.approx(3.0)
    assert BackboneSettings().cost_usd("unpriced", 1_000_000, 0) == 0.0
    limit = BackboneSettings().rate_limits["OPENAI"]
    assert (limit.requests_per_minute, limit.tokens_per_minute) == (1000, 0)
