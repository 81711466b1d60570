"""The chat stress script's reply overhead (issue 18): which reply answers which message."""

from __future__ import annotations

from bench.stress_chat import Message, _answers, _overhead_figures


def _message(mid: str, sender: str, at: float, kind: str = "participant") -> Message:
    return Message(mid, kind, sender, "t1", at, {"message": mid})


def test_each_claim_is_answered_by_the_claimers_first_reply_not_taken_before():
    messages = {
        m.id: m
        for m in [
            _message("m1", "human", 10.0, "system"),
            _message("m2", "human", 10.1, "system"),
            _message("early", "pub-a", 9.0),  # before the messages: no reply to them
            _message("other", "pub-b", 10.2),  # another agent
            _message("r1", "pub-a", 10.5),
            _message("r2", "pub-a", 12.0),
            _message("r3", "pub-b", 12.5),
        ]
    }
    logs = {
        "m2-participant": {"publicId": "pub-a"},  # claimed second: r1 is m1's
        "m1-participant": {"publicId": "pub-a"},
        "m1-mediator": {"publicId": "pub-b", "messageId": "r3"},  # an election names it
        "quota-x-1": {"messageId": "r1"},  # not an election
        "m9-participant": {"publicId": "pub-a"},  # a message not in the chat
    }
    answered = {i: m.id for i, m in _answers(messages, logs).items()}
    assert answered == {"m1-participant": "r1", "m2-participant": "r2", "m1-mediator": "r3"}


def test_overhead_figures_are_percentiles_of_the_replies():
    figures = _overhead_figures([100.0, 50.0, 200.0])
    assert (figures["n"], figures["p50"], figures["p90"]) == (3, 100.0, 180.0)
    assert _overhead_figures([])["p50"] is None
