"""The Halton sequence: points of [0, 1)^d that fill the space evenly however many are taken.

Big Five scores drawn independently can cluster (three agents all high on every trait); each
new Halton point falls in the largest gap the earlier ones left, so any run of the sequence is
spread out. Deliberate Lab samples its persona traits this way (Halton 1960). Its plain form
has one flaw for small batches: in the larger prime bases the first points rise together
(base 7 and base 11 give 1/7, 2/7, ... and 1/11, 2/11, ...), so two traits move in lockstep for
the first handful of personas. A seeded permutation of each base's digits (Braaten and Weller
1979) keeps the even spread and breaks that lockstep, and makes the sequence reproducible
from a seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29)


def radical_inverse(index: int, base: int, digits: Sequence[int] | None = None) -> float:
    """``index`` written in ``base`` and mirrored behind the point: 6 in base 2 (110) is 0.011,
    3/8. ``digits`` maps each digit before it is mirrored (a permutation with 0 kept as 0, so
    the trailing zeros stay zeros and the value stays in [0, 1))."""
    if index < 0:
        raise ValueError(f"a Halton index is never negative: {index}")
    value, scale = 0.0, 1.0 / base
    while index:
        index, digit = divmod(index, base)
        value += scale * (digits[digit] if digits else digit)
        scale /= base
    return value


def digit_permutation(base: int, rng: random.Random) -> list[int]:
    """A random permutation of the digits 1..base-1 (0 stays 0)."""
    rest = list(range(1, base))
    rng.shuffle(rest)
    return [0, *rest]


class Halton:
    """The ``dimensions``-dimensional Halton sequence, one prime base per dimension; with a
    ``seed``, its digits scrambled by a permutation drawn from that seed (same seed, same
    points); without, the plain sequence."""

    def __init__(self, dimensions: int, seed: int | str | None = None) -> None:
        if not 1 <= dimensions <= len(PRIMES):
            raise ValueError(f"dimensions must be 1..{len(PRIMES)}, not {dimensions}")
        self.bases = PRIMES[:dimensions]
        rng = random.Random(f"halton:{seed}") if seed is not None else None
        self.digits: list[list[int] | None] = [
            digit_permutation(b, rng) if rng else None for b in self.bases
        ]

    def point(self, index: int) -> tuple[float, ...]:
        """The sequence's point number ``index`` (0 is the origin; start at 1)."""
        return tuple(
            radical_inverse(index, base, digits)
            for base, digits in zip(self.bases, self.digits, strict=True)
        )

    def points(self, count: int, start: int = 1) -> list[tuple[float, ...]]:
        return [self.point(i) for i in range(start, start + count)]
