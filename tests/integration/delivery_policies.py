"""Delivery policies for tests that need events lost the way a killed runtime loses them."""

from __future__ import annotations

from collections.abc import Callable

from emulator.delivery import Delivery
from emulator.dispatcher import Policy


class Losing(Policy):
    """Loses the deliveries ``lose`` picks, as a runtime killed before handling them would."""

    def __init__(self, lose: Callable[[Delivery], bool]) -> None:
        self.lose = lose
        self.lost: list[Delivery] = []

    def schedule(self, delivery: Delivery) -> list[tuple[float, Delivery]]:
        if self.lose(delivery):
            self.lost.append(delivery)
            delivery.finish(True)  # acknowledged, never run
            return []
        return [(0.0, delivery)]


class Retrying(Policy):
    """Runs a failed delivery of a retry-enabled function (``retrying``) again, a moment later,
    up to ``times`` times, as Pub/Sub redelivers a nacked message."""

    def __init__(self, retrying: frozenset[str], times: int = 3) -> None:
        self.retrying = retrying
        self.times = times

    def retry_delay(self, delivery: Delivery) -> float | None:
        if delivery.function not in self.retrying or delivery.attempt > self.times:
            return None
        return 0.05
