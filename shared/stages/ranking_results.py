"""Group result of a ranking stage: the Condorcet winner, with a Copeland fallback."""

from __future__ import annotations

from itertools import combinations


def winner(rankings: list[list[str]]) -> str:
    """The candidate who beats every other head to head; if there is none, the one with the most
    head-to-head wins (ties broken by id, so the result is stable)."""
    candidates = sorted({c for r in rankings for c in r})
    if not candidates:
        return ""
    wins = dict.fromkeys(candidates, 0)
    for a, b in combinations(candidates, 2):
        a_over_b = sum(1 for r in rankings if a in r and b in r and r.index(a) < r.index(b))
        b_over_a = sum(1 for r in rankings if a in r and b in r and r.index(b) < r.index(a))
        if a_over_b > b_over_a:
            wins[a] += 1
        elif b_over_a > a_over_b:
            wins[b] += 1
    return max(candidates, key=lambda c: (wins[c], [-ord(ch) for ch in c]))
