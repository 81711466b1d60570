"""The retry policy, driven through real clients against the fakes (short waits)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
import tenacity

from shared.llm.base import Credentials, ModelError, ModelReply, ModelRequest
from shared.llm.gemini import GeminiClient
from shared.llm.openai_compat import OpenAICompatClient
from shared.llm.retry import MAX_RETRY_AFTER_S, error_for_status, remaining, retry_after, retrying
from tests.fakes import fake_gemini as g
from tests.fakes import fake_openai as o
from tests.fakes import slow
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI

FAST = tenacity.wait_none()


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


def gemini_request(fake: FakeGemini, timeout_s: float | None = 5.0) -> ModelRequest:
    creds = Credentials(api_key="k", base_url=fake.url)
    return ModelRequest("hi", None, "gemini-2.5-flash", "s", credentials=creds, timeout_s=timeout_s)


def call_with_retries(
    client: GeminiClient | OpenAICompatClient,
    request: ModelRequest,
    deadline: float | None = None,
    **kwargs: object,
) -> tuple[ModelReply, list[str]]:
    """What functions/agents/model_call.py does: one log line per attempt."""
    log: list[str] = []
    for attempt in retrying(deadline, **kwargs):  # type: ignore[arg-type]
        with attempt:
            n = attempt.retry_state.attempt_number
            timeout = remaining(deadline, cap=request.timeout_s)
            try:
                reply = client.generate(dataclasses.replace(request, timeout_s=timeout))
            except ModelError as error:
                log.append(f"{n}:{error.status}")
                raise
            log.append(f"{n}:OK")
    return reply, log


def test_retries_429_and_503_then_succeeds(gemini: FakeGemini) -> None:
    gemini.push(g.error(429), g.error(503), g.text("third time lucky"))
    reply, log = call_with_retries(GeminiClient(), gemini_request(gemini), wait=FAST)
    assert reply.text == "third time lucky"
    assert log == ["1:QUOTA_ERROR", "2:PROVIDER_UNAVAILABLE_ERROR", "3:OK"]
    assert len(gemini.requests) == 3


def test_retries_openai_timeouts_then_succeeds() -> None:
    with FakeOpenAI() as fake:
        fake.push(slow(o.text("late"), 3.0), o.text("on time"))
        req = ModelRequest(
            "hi", None, "m", "s", credentials=Credentials("k", fake.base_url), timeout_s=0.2
        )
        reply, log = call_with_retries(OpenAICompatClient(), req, wait=FAST)
    assert reply.text == "on time"
    assert log == ["1:PROVIDER_UNAVAILABLE_ERROR", "2:OK"]


@pytest.mark.parametrize("status", [400, 401, 403])
def test_stops_at_a_non_retryable_error(gemini: FakeGemini, status: int) -> None:
    gemini.push(g.error(status), g.text("never asked"))
    with pytest.raises(ModelError) as info:
        call_with_retries(GeminiClient(), gemini_request(gemini), wait=FAST)
    assert not info.value.retryable
    assert len(gemini.requests) == 1


def test_stops_after_max_attempts_and_reraises_the_last_error(gemini: FakeGemini) -> None:
    gemini.default = g.error(503)
    with pytest.raises(ModelError) as info:  # not tenacity.RetryError
        call_with_retries(GeminiClient(), gemini_request(gemini), wait=FAST, max_attempts=3)
    assert info.value.status == "PROVIDER_UNAVAILABLE_ERROR"
    assert len(gemini.requests) == 3


def test_stops_at_the_deadline(gemini: FakeGemini) -> None:
    gemini.default = g.error(503)
    started = time.monotonic()
    deadline = started + 2.0  # room for two attempts even when a loaded machine makes each slow
    with pytest.raises(ModelError):
        call_with_retries(
            GeminiClient(),
            gemini_request(gemini),
            deadline,
            wait=tenacity.wait_fixed(0.25),
            min_attempt_s=0.1,
            max_attempts=100,
        )
    assert time.monotonic() <= deadline + 5.0  # not 100 attempts' waits (25 s), even when loaded
    assert 2 <= len(gemini.requests) <= 9  # retried, and no more often than the waits allow


def test_a_slow_provider_cannot_overrun_the_deadline(gemini: FakeGemini) -> None:
    """Each attempt's timeout is the time left, so one hung call ends the loop on time."""
    gemini.default = slow(g.text("too late"), 60.0)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        call_with_retries(
            GeminiClient(), gemini_request(gemini, timeout_s=60), started + 0.6, wait=FAST
        )
    assert info.value.status == "PROVIDER_UNAVAILABLE_ERROR"
    assert time.monotonic() - started < 15.0  # far below the reply's 60 s, even when loaded
    assert len(gemini.requests) == 1


def test_waits_are_clamped_to_leave_time_for_an_attempt() -> None:
    sleeps: list[float] = []
    policy = retrying(
        100.0,
        max_attempts=3,
        wait=tenacity.wait_fixed(10),
        min_attempt_s=1.0,
        sleep=sleeps.append,
        clock=lambda: 95.0,
    )
    with pytest.raises(ModelError):
        for attempt in policy:
            with attempt:
                raise ModelError("QUOTA_ERROR", "slow down", retryable=True)
    assert sleeps == [4.0, 4.0]  # 100 - 95 - 1, never the full 10 s


def test_no_sleep_when_no_time_is_left() -> None:
    sleeps: list[float] = []
    policy = retrying(100.0, wait=FAST, min_attempt_s=1.0, sleep=sleeps.append, clock=lambda: 99.5)
    attempts = 0
    with pytest.raises(ModelError):
        for attempt in policy:
            with attempt:
                attempts += 1
                raise ModelError("PROVIDER_UNAVAILABLE_ERROR", "down", retryable=True)
    assert attempts == 1 and sleeps == []


def test_default_backoff_is_jittered_exponential() -> None:
    sleeps: list[float] = []
    policy = retrying(None, max_attempts=5, sleep=sleeps.append)
    with pytest.raises(ModelError):
        for attempt in policy:
            with attempt:
                raise ModelError("QUOTA_ERROR", "slow down", retryable=True)
    assert len(sleeps) == 4
    assert all(0 <= s <= 0.5 * 2**n for n, s in enumerate(sleeps, start=1))


def test_other_exceptions_are_not_retried() -> None:
    attempts = 0
    with pytest.raises(ValueError):
        for attempt in retrying(None, wait=FAST):
            with attempt:
                attempts += 1
                raise ValueError("a bug, not a provider failure")
    assert attempts == 1


def test_before_sleep_sees_every_retry() -> None:
    seen: list[int] = []
    with pytest.raises(ModelError):
        for attempt in retrying(
            None,
            max_attempts=3,
            wait=FAST,
            before_sleep=lambda rs: seen.append(rs.attempt_number),
        ):
            with attempt:
                raise ModelError("QUOTA_ERROR", "slow down", retryable=True)
    assert seen == [1, 2]


def test_remaining() -> None:
    assert remaining(None) is None
    assert remaining(None, cap=30) == 30
    assert remaining(time.monotonic() - 5) == 0.0
    left = remaining(time.monotonic() + 100, cap=30)
    assert left == 30
    left = remaining(time.monotonic() + 10)
    assert left is not None and 9 < left <= 10


@pytest.mark.parametrize(
    ("http_status", "status", "retryable"),
    [
        (400, "CONFIG_ERROR", False),
        (401, "AUTHENTICATION_ERROR", False),
        (403, "AUTHENTICATION_ERROR", False),
        (404, "CONFIG_ERROR", False),
        (408, "PROVIDER_UNAVAILABLE_ERROR", True),
        (422, "CONFIG_ERROR", False),
        (429, "QUOTA_ERROR", True),
        (500, "PROVIDER_UNAVAILABLE_ERROR", True),
        (503, "PROVIDER_UNAVAILABLE_ERROR", True),
        (504, "PROVIDER_UNAVAILABLE_ERROR", True),
    ],
)
def test_error_for_status(http_status: int, status: str, retryable: bool) -> None:
    error = error_for_status(http_status, "boom")
    assert (error.status, error.retryable, error.http_status) == (status, retryable, http_status)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "250", "retry-after": "7"}, 0.25),  # OpenAI's, the finer one
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),  # a date: the backoff decides
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers) == seconds


def test_a_429_retry_after_is_honoured_within_the_deadline() -> None:
    """The provider's wait, not the backoff's: trying earlier only earns another 429. Capped
    at MAX_RETRY_AFTER_S, and never past the deadline (less one useful attempt)."""
    with FakeOpenAI() as fake:
        fake.push(
            dataclasses.replace(o.error(429), headers=(("retry-after", "5"),)),
            dataclasses.replace(o.error(429), headers=(("retry-after", "3600"),)),
            o.text("ok"),
        )
        req = ModelRequest("hi", None, "m", "s", credentials=Credentials("k", fake.base_url))
        slept: list[float] = []
        deadline = time.monotonic() + 100  # the sleeps are recorded, not slept
        reply, log = call_with_retries(
            OpenAICompatClient(), req, deadline=deadline, wait=FAST, sleep=slept.append
        )
    assert reply.text == "ok" and log == ["1:QUOTA_ERROR", "2:QUOTA_ERROR", "3:OK"]
    assert slept == [5.0, MAX_RETRY_AFTER_S]


def test_a_retry_after_past_the_deadline_stops_the_loop_at_once() -> None:
    """No sleep that the provider said would be too short: the 429 is raised now (the caller
    hands the call to a later invocation)."""
    with FakeOpenAI() as fake:
        fake.push(dataclasses.replace(o.error(429), headers=(("retry-after", "50"),)), o.text("ok"))
        req = ModelRequest("hi", None, "m", "s", credentials=Credentials("k", fake.base_url))
        slept: list[float] = []
        deadline = time.monotonic() + 10
        with pytest.raises(ModelError) as info:
            call_with_retries(
                OpenAICompatClient(), req, deadline=deadline, wait=FAST, sleep=slept.append
            )
        assert info.value.status == "QUOTA_ERROR" and len(fake.requests) == 1
    assert slept == []
