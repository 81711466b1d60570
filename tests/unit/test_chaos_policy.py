"""Chaos settings, the chaos delivery policy, the dispatcher's retry path and model faults."""

from __future__ import annotations

import threading

import pytest

from emulator.chaos import Chaos, ChaosSettings
from emulator.delivery import Delivery
from emulator.dispatcher import Dispatcher
from emulator.model_faults import FaultPlan, FaultyModel, injected
from shared.llm import ModelError, ModelRequest, providers
from shared.llm.scripted import ScriptedModel


def _delivery(function: str = "onAgentWake", settle=None) -> Delivery:
    return Delivery(function, "topic", "event-1", {}, b"", settle=settle)


def test_settings_from_env_and_bad_values():
    env = {"DLAB_CHAOS_SEED": "7", "DLAB_CHAOS_FAULT_RATE": "0.4", "DLAB_CHAOS_MAX_RETRIES": ""}
    settings = ChaosSettings.from_env(env, duplicate_rate=1.0)
    assert (settings.seed, settings.fault_rate, settings.duplicate_rate) == (7, 0.4, 1.0)
    assert settings.max_retries == ChaosSettings().max_retries
    with pytest.raises(ValueError, match="DLAB_CHAOS_FAULT_RATE='lots' is not a number"):
        ChaosSettings.from_env({"DLAB_CHAOS_FAULT_RATE": "lots"})
    with pytest.raises(ValueError, match="duplicate_rate must be within"):
        ChaosSettings(duplicate_rate=1.5)


def test_every_event_is_duplicated_and_delayed_and_only_the_original_settles():
    settled = []
    policy = Chaos(ChaosSettings(duplicate_rate=1.0, max_delay_s=0.3))
    schedule = policy.schedule(_delivery(settle=settled.append))
    assert len(schedule) == 2 and policy.duplicated == 1
    assert all(0.0 <= delay <= 0.3 for delay, _ in schedule)
    (_, original), (_, copy) = schedule
    assert original.settle is not None and copy.settle is None


def test_no_duplicates_at_rate_zero():
    policy = Chaos(ChaosSettings(duplicate_rate=0.0))
    assert all(len(policy.schedule(_delivery())) == 1 for _ in range(50))


def test_only_retry_enabled_functions_are_retried_and_acks_lost():
    policy = Chaos(ChaosSettings(lost_ack_rate=1.0, max_retries=2), frozenset({"onAgentWake"}))
    wake, chat = _delivery("onAgentWake"), _delivery("onChatMessageCreated")
    assert policy.reported(wake, True) is False and policy.reported(chat, True) is True
    assert policy.retry_delay(chat) is None
    assert policy.retry_delay(wake) is not None
    wake.attempt = 3
    assert policy.retry_delay(wake) is None  # out of runtime retries: nacked instead


def test_dispatcher_settles_once_after_the_retries():
    runs, settled, done = [], [], threading.Event()

    def run(delivery: Delivery) -> bool:
        runs.append(delivery.attempt)
        return delivery.attempt >= 3  # fails twice, then succeeds

    def settle(ok: bool) -> None:
        settled.append(ok)
        done.set()

    policy = Chaos(ChaosSettings(duplicate_rate=0, max_delay_s=0, lost_ack_rate=0), frozenset("f"))
    dispatcher = Dispatcher(run, workers=1, policy=policy)
    dispatcher.start()
    try:
        dispatcher.submit(_delivery("f", settle=settle))
        assert done.wait(10)
    finally:
        dispatcher.stop()
    assert runs == [1, 2, 3] and settled == [True]


def _request() -> ModelRequest:
    return ModelRequest(prompt="p", response_schema={"type": "object"}, model_name="m", seed="s")


def test_faults_are_what_providers_do():
    model = FaultyModel(ScriptedModel(), FaultPlan(rate=1.0, seed=1))
    outcomes = set()
    for _ in range(60):
        try:
            outcomes.add(("reply", model.generate(_request()).text))
        except ModelError as error:
            assert error.retryable and error.status in ("QUOTA_ERROR", "PROVIDER_UNAVAILABLE_ERROR")
            outcomes.add(("error", error.http_status))
    assert {("error", 429), ("error", 503)} <= outcomes
    assert any(kind == "reply" for kind, _ in outcomes)
    assert sum(model.plan.injected.values()) == 60
    clean = FaultyModel(ScriptedModel(), FaultPlan(rate=0.0))
    assert clean.generate(_request()).text == ScriptedModel().generate(_request()).text


def test_injection_is_scoped_to_the_block_and_the_thread():
    seen_elsewhere: list[object] = []
    with injected(FaultPlan(rate=1.0)) as plan:
        assert all(
            isinstance(providers.client_for(api), FaultyModel) for api in ("GEMINI", "OLLAMA")
        )
        other = threading.Thread(
            target=lambda: seen_elsewhere.append(providers.client_for("GEMINI"))
        )
        other.start()
        other.join()
        with pytest.raises(ModelError):
            for _ in range(20):  # a garbled reply is returned, not raised
                providers.client_for("SCRIPTED").generate(_request())
    assert not isinstance(seen_elsewhere[0], FaultyModel)
    assert not isinstance(providers.client_for("SCRIPTED"), FaultyModel)
    assert sum(plan.injected.values()) >= 1
