"""What an agent participant does at a stage, and the contract of a model-answered stage."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Protocol

from shared.errors import WorkError
from shared.models import ParticipantProfile, ProfileBase, StageAnswer


class AgentAction(StrEnum):
    ANSWER = "answer"
    """One model call with structured output, then advance."""
    ADVANCE = "advance"
    """No model call; advance."""
    WAIT = "wait"
    """Stay: chat, private chat and transfer stages are left by other logic."""


class AnswerValidationError(WorkError, ValueError):
    """A model reply that is not a valid answer; the message says exactly what is wrong, so it
    can go back to the model as a corrective turn."""


@dataclasses.dataclass(frozen=True)
class Peer:
    public_id: str
    name: str


@dataclasses.dataclass(frozen=True)
class AnswerContext:
    participant: ParticipantProfile
    peers: Sequence[Peer] = ()
    """Other active participants of the cohort, for stages about participants."""


class AnswerSpec(Protocol):
    def schema(self, stage: Any, ctx: AnswerContext) -> dict[str, Any]:
        """JSON Schema of a valid reply."""

    def extract(self, stage: Any, ctx: AnswerContext, reply: Any) -> StageAnswer | ProfileBase:
        """The stage answer (or profile) a reply means; AnswerValidationError if it is invalid."""
