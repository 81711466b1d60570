"""Group result of a ranking stage: the Condorcet winner, with a Copeland fallback."""

from __future__ import annotations

from itertools import combinations


def _preferred(rankings: list[list[str]], a: str, b: str) -> int:
    """How many rankings list both and put ``a`` first."""
    return sum(1 for r in rankings if a in r and b in r and r.index(a) < r.index(b))


def winner(rankings: list[list[str]]) -> str:
    """The candidate who beats every other head to head; if there is none, the one with the most
    head-to-head wins (ties broken by id, so the result is stable)."""
    candidates = sorted({c for r in rankings for c in r})
    if not candidates:
        return ""
    wins = dict.fromkeys(candidates, 0)
    for a, b in combinations(candidates, 2):
        a_over_b, b_over_a = _preferred(rankings, a, b), _preferred(rankings, b, a)
        if a_over_b > b_over_a:
            wins[a] += 1
        elif b_over_a > a_over_b:
            wins[b] += 1
    return max(candidates, key=lambda c: (wins[c], [-ord(ch) for ch in c]))
