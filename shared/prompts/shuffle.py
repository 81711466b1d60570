"""DL's seeded shuffle (utils/src/utils/random.utils.ts), reproduced bit for bit so a GROUP
shuffles into the same order here as in Deliberate Lab for the same seed string."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_A, _B, _M = 1664525, 1013904223, 2**32


def seed_from_string(value: str) -> int:
    """First four bytes of the MD5 digest, big-endian (DL's Node hashString)."""
    return int.from_bytes(hashlib.md5(value.encode("utf-8")).digest()[:4], "big")


def shuffle_with_seed(items: Sequence[T], seed: str) -> list[T]:
    """DL's shuffleWithSeed: an LCG seeded from ``seed`` picks the remaining items one by one."""
    state = seed_from_string(seed)
    pool = list(items)
    out: list[T] = []
    while pool:
        state = (_A * state + _B) % _M
        out.append(pool.pop(int(state / _M * len(pool))))
    return out
