"""Chaos delivery: what production Cloud Functions do to events, at their worst, on purpose.

Each Firestore and Pub/Sub event may be delivered twice, every delivery waits a random delay (so
deliveries overtake each other), failed deliveries of retry-enabled functions are retried with
backoff, and model calls fail at a given rate (``emulator.model_faults``). Seeded, so a failing run
can be described by its settings.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading

from emulator.delivery import Delivery
from emulator.dispatcher import Policy
from emulator.model_faults import FaultPlan

ENV_PREFIX = "DLAB_CHAOS_"


@dataclasses.dataclass(frozen=True)
class ChaosSettings:
    seed: int = 0
    duplicate_rate: float = 0.5
    """Probability that an event is delivered a second time."""
    max_delay_s: float = 0.2
    """Every delivery (copies and retries too) waits uniformly up to this long first."""
    fault_rate: float = 0.1
    """Probability that a model call fails: a rate limit, an outage or a garbled reply."""
    lost_ack_rate: float = 0.2
    """Probability that a retry-enabled function's success is lost (the instance died after the
    work, before the acknowledgement), so the platform runs it again."""
    max_retries: int = 8
    """Runtime retries of a failed retry-enabled delivery before it is nacked (Pub/Sub then
    redelivers, as production does until the message expires)."""

    def __post_init__(self) -> None:
        for name in ("duplicate_rate", "fault_rate", "lost_ack_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"chaos {name} must be within [0, 1], not {value}")
        if self.max_delay_s < 0 or self.max_retries < 0:
            raise ValueError("chaos max_delay_s and max_retries must not be negative")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **defaults: float) -> ChaosSettings:
        """Settings from ``DLAB_CHAOS_SEED``, ``DLAB_CHAOS_DUPLICATE_RATE``,
        ``DLAB_CHAOS_MAX_DELAY_S``, ``DLAB_CHAOS_FAULT_RATE``, ``DLAB_CHAOS_LOST_ACK_RATE``,
        ``DLAB_CHAOS_MAX_RETRIES``;
        ``defaults`` for the ones not set."""
        env = dict(os.environ) if env is None else env
        values: dict[str, float] = dict(defaults)
        for field in dataclasses.fields(cls):
            raw = env.get(ENV_PREFIX + field.name.upper())
            if raw is None or not raw.strip():
                continue
            try:
                values[field.name] = int(raw) if field.type in (int, "int") else float(raw)
            except ValueError:
                raise ValueError(
                    f"{ENV_PREFIX}{field.name.upper()}={raw!r} is not a number"
                ) from None
        return cls(**values)  # type: ignore[arg-type]

    def describe(self) -> str:
        return (
            f"seed {self.seed}, duplicates {self.duplicate_rate:.0%}, delays up to "
            f"{self.max_delay_s * 1000:.0f} ms, model faults {self.fault_rate:.0%}, lost acks "
            f"{self.lost_ack_rate:.0%}"
        )


class Chaos(Policy):
    """The delivery half of chaos; ``retrying`` names the retry-enabled functions."""

    def __init__(self, settings: ChaosSettings, retrying: frozenset[str] = frozenset()) -> None:
        self.settings = settings
        self.retrying = retrying
        self._rng = random.Random(settings.seed)
        self._lock = threading.Lock()
        self.duplicated = 0
        self.lost_acks = 0
        self.retried = 0

    def _delay(self) -> float:
        return self._rng.uniform(0.0, self.settings.max_delay_s)

    def schedule(self, delivery: Delivery) -> list[tuple[float, Delivery]]:
        with self._lock:
            copies = [(self._delay(), delivery)]
            if self._rng.random() < self.settings.duplicate_rate:
                self.duplicated += 1
                # the copy never settles a Pub/Sub message: the original acks or nacks it
                copies.append((self._delay(), dataclasses.replace(delivery, settle=None)))
            return copies

    def reported(self, delivery: Delivery, ok: bool) -> bool:
        if not ok or delivery.function not in self.retrying:
            return ok
        with self._lock:
            if self._rng.random() >= self.settings.lost_ack_rate:
                return True
            self.lost_acks += 1
            return False

    def retry_delay(self, delivery: Delivery) -> float | None:
        if delivery.function not in self.retrying or delivery.attempt > self.settings.max_retries:
            return None
        with self._lock:
            self.retried += 1
            backoff = min(2.0, 0.05 * 2**delivery.attempt)
            return backoff * self._rng.uniform(0.5, 1.0) + self._delay()


@dataclasses.dataclass(frozen=True)
class ChaosRun:
    """What a chaos block did so far (for reports and failure messages)."""

    policy: Chaos
    faults: FaultPlan

    def counts(self) -> dict[str, int]:
        return {
            "duplicated": self.policy.duplicated,
            "lost acks": self.policy.lost_acks,
            "retried": self.policy.retried,
            **{f"fault:{kind}": n for kind, n in sorted(self.faults.injected.items())},
        }

    def injected(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.counts().items())

    def describe(self) -> str:
        return f"chaos ({self.policy.settings.describe()}): {self.injected()}"
