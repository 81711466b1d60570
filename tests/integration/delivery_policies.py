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
