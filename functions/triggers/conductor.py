"""Conductor workflows: a conversation document starts one; each step, and each agent step of a
parallel agent's branch, is one Pub/Sub turn; the scheduled tick starts conversations whose
creation event was lost and re-drives steps whose invocation died."""

from __future__ import annotations

import logging

from functions._events import FirestoreEvent, PubSubEvent
from functions.conductor import human, runner
from functions.conductor.wire import ConductorBranch, ConductorStep

log = logging.getLogger(__name__)


def on_conversation_created(event: FirestoreEvent) -> None:
    runner.start(event.params["conversationId"])


def on_conductor_step(event: PubSubEvent) -> None:
    runner.run_step(event.message(ConductorStep))


def on_conductor_branch(event: PubSubEvent) -> None:
    runner.run_branch(event.message(ConductorBranch))


def on_human_answer_written(event: FirestoreEvent) -> None:
    human.wake(event.params["conversationId"], event.params["stepId"])


def on_conductor_tick(event: PubSubEvent) -> None:
    log.info("conductor watchdog: %d conversation(s) started or re-driven", runner.redrive())
