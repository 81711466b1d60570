"""An outage's garbage is a retryable provider fault; a well-formed wrong answer is not."""

from __future__ import annotations

import json

import pytest

from shared.llm import gemini, openai_compat
from shared.llm.base import ModelError, ModelReply, Usage
from shared.llm.policy import CallPolicy
from shared.llm.protocol import check_protocol


def _reply(text: str) -> ModelReply:
    return ModelReply(text=text, usage=Usage(), raw=text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("  \n", "empty"),
        ("<!DOCTYPE html><html><body>502</body></html>", "HTML"),
        ("<html><body>Service Unavailable</body></html>", "HTML"),
        ("We are down for maintenance.", "no JSON"),
        ('{"response": "I think we should', "no JSON"),  # a cut-off stream
    ],
)
def test_garbage_is_a_retryable_provider_fault(text: str, why: str) -> None:
    with pytest.raises(ModelError) as caught:
        check_protocol(_reply(text), expects_json=True)
    assert caught.value.retryable and caught.value.status == "PROVIDER_UNAVAILABLE_ERROR"
    assert why in str(caught.value)


@pytest.mark.parametrize(
    "text", ['{"why": 3}', "[1, 2, 3]", 'Sure: ```json\n{"a": 1}\n```', '{"a": 1,}']
)
def test_well_formed_json_goes_on_to_validation(text: str) -> None:
    check_protocol(_reply(text), expects_json=True)  # the model's answer, right or wrong


@pytest.mark.parametrize("text", ["Hello everyone, I agree.", ""])
def test_free_text_is_the_model_s_answer_even_empty(text: str) -> None:
    check_protocol(_reply(text), expects_json=False)


def test_an_html_page_is_garbage_even_as_free_text() -> None:
    with pytest.raises(ModelError, match="HTML"):
        check_protocol(_reply("<html><body>502</body></html>"), expects_json=False)


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"error": {"code": 503, "message": "overloaded"}}),
        json.dumps({"status": "ok"}),  # JSON, but no generateContent response
    ],
)
def test_gemini_body_that_is_not_a_response_is_retryable(body: str) -> None:
    with pytest.raises(ModelError) as caught:
        gemini.parse_response(body)
    assert caught.value.retryable and caught.value.http_status == 200


def test_openai_error_body_with_200_is_retryable() -> None:
    with pytest.raises(ModelError) as caught:
        openai_compat.parse_response(json.dumps({"error": {"message": "upstream timeout"}}))
    assert caught.value.retryable and "upstream timeout" in str(caught.value)


def test_call_policy_from_env() -> None:
    assert CallPolicy.from_env({}) == CallPolicy()
    policy = CallPolicy.from_env(
        {"DLAB_MODEL_MAX_ATTEMPTS": "2", "DLAB_MOVE_ON_WITHOUT_ANSWER": "false"}
    )
    assert policy.max_attempts == 2 and not policy.move_on_without_answer
    with pytest.raises(ValueError, match="DLAB_MODEL_BACKOFF_S='-1'"):
        CallPolicy.from_env({"DLAB_MODEL_BACKOFF_S": "-1"})
