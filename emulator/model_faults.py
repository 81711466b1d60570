"""Model fault injection for chaos runs: rate limits, outages and garbled replies at a given rate.

Local-runtime only (chaos mode), so it lives here and not in the deployed ``shared`` package.

The faults are what real providers do, raised or returned where a real client would: a 429 or a
503 as the ModelError the HTTP clients raise (so the retry policy and the call log run as they
would), a garbled reply as text that is not the JSON asked for (so the corrective turn runs).
"""

from __future__ import annotations

import collections
import contextlib
import random
import threading
from collections.abc import Iterator, Mapping

from pydantic import BaseModel, ConfigDict, Field

from shared.llm import providers
from shared.llm.base import ModelClient, ModelReply, ModelRequest, Usage, estimate_tokens
from shared.llm.retry import error_for_status

KINDS = ("rate-limit", "outage", "garbled")

_GARBLED = (
    "Sure! Here is my answer:",  # prose instead of JSON
    '{"response": "I think we should',  # cut off mid-object
    "[1, 2, 3]",  # JSON, but not the object asked for
    "```json\n{]\n```",  # broken fence
)


class FaultSpec(BaseModel):
    """A fault plan as it travels to a worker process (``emulator.workers``): rate and seed."""

    model_config = ConfigDict(frozen=True)

    rate: float = Field(ge=0.0, le=1.0)
    seed: int


class FaultPlan:
    """Which calls fail and how: one seeded draw per call, shared by every wrapped client."""

    def __init__(self, rate: float, seed: int | None = None) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be within [0, 1], not {rate}")
        self.rate = rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.injected: collections.Counter[str] = collections.Counter()
        """Faults injected so far, by kind."""

    @classmethod
    def from_spec(cls, spec: FaultSpec) -> FaultPlan:
        return cls(spec.rate, spec.seed)

    def fork(self) -> FaultSpec:
        """A plan of its own for one delivery run in a worker process, seeded from this one's
        draws (a worker cannot draw from this plan: its generator lives in this process)."""
        with self._lock:
            return FaultSpec(rate=self.rate, seed=self._rng.getrandbits(63))

    def add(self, injected: Mapping[str, int]) -> None:
        """Count faults a forked plan injected as this plan's own."""
        with self._lock:
            self.injected.update(injected)

    def draw(self) -> str | None:
        """None (no fault), ``rate-limit``, ``outage``, or the garbled text to reply with."""
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            kind = self._rng.choice(KINDS)
            self.injected[kind] += 1
            return kind if kind != "garbled" else self._rng.choice(_GARBLED)


class FaultyModel:
    """A client whose calls fail as ``plan`` draws."""

    def __init__(self, inner: ModelClient, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan

    def generate(self, request: ModelRequest) -> ModelReply:
        fault = self.plan.draw()
        if fault == "rate-limit":
            raise error_for_status(429, "injected fault: rate limit exceeded")
        if fault == "outage":
            raise error_for_status(503, "injected fault: the model is overloaded")
        if fault is not None:
            usage = Usage(estimate_tokens(request.prompt), estimate_tokens(fault))
            return ModelReply(text=fault, usage=usage, raw=fault)
        return self.inner.generate(request)


def wrapper(plan: FaultPlan) -> providers.ClientWrapper:
    """What ``providers.wrapped`` applies to every client so its calls fail as ``plan`` draws."""
    return lambda client: FaultyModel(client, plan)


@contextlib.contextmanager
def injected(plan: FaultPlan) -> Iterator[FaultPlan]:
    """Every client this thread looks up fails as ``plan`` draws, for the duration of the block.

    Scoped to the calling context: the provider table itself is never changed, so a block that
    raises or another thread cannot leave the deployment's clients wrapped."""
    with providers.wrapped(wrapper(plan)):
        yield plan
