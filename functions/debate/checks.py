"""Completion checks as units of work: a round's (the next round, the head agent, the cluster's
outputs) and a layer's (the next layer or the decision). They call the user's
``compare_responses`` and ``draw_final_conclusion``: one that raises ends the check at once and
fails the debate, instead of being raised again by every statement and every watchdog tick."""

from __future__ import annotations

from functions.debate import docs, failing, layers, progress
from shared.debate import naming


def round_done(d: str, round_id: str, layer: int) -> None:
    """Complete the round if all its statements exist, then its layer if it was the last."""
    path = docs.round_(d, round_id)
    failing.run(d, f"complete-{round_id}", path, lambda: _round(d, round_id, layer))


def _round(d: str, round_id: str, layer: int) -> None:
    step = progress.complete_round(d, round_id)
    if step is not None and step.cluster_complete:
        layer_done(d, layer)


def layer_done(d: str, index: int) -> None:
    """Complete the layer if every cluster of it is complete (its own unit: concurrent checks
    of its last clusters coalesce on one lease)."""
    layer_id = naming.layer_id(index)
    failing.run(
        d, f"complete-{layer_id}", docs.layer(d, layer_id), lambda: layers.complete_layer(d, index)
    )
