"""The live log of ``make up`` shows whatever a person writes in the console, and never crashes
on it."""

from __future__ import annotations

import io

from emulator.livelog import LiveLog

CHAT = "experiments/e1/cohorts/c1/publicStageData/chat/chats/m1"


def _log() -> tuple[LiveLog, io.StringIO]:
    out = io.StringIO()
    return LiveLog(db=None, override=None, out=out, color=False), out  # type: ignore[arg-type]


def test_a_chat_message_of_any_shape_gets_a_line():
    log, out = _log()
    log.show(log._chat, CHAT, {"profile": "x", "message": "hello"})
    log.show(log._chat, CHAT + "b", {"profile": {"name": "Ann"}, "message": "hi"})
    lines = out.getvalue().splitlines()
    assert "?: hello" in lines[0] and "Ann: hi" in lines[1]


def test_a_document_the_log_cannot_read_is_named_once_and_the_log_goes_on():
    log, out = _log()
    odd = {"agentConfig": {"modelSettings": "GEMINI"}, "currentStageId": "s1"}
    for _ in range(3):  # each poll sees it again
        log.show(log._participant, "experiments/e1/participants/p1", odd)
    log.show(log._error, "experiments/e1/errors/r1", {"occurrences": "many"})
    log.show(log._chat, CHAT, {"message": "still here"})
    lines = out.getvalue().splitlines()
    unreadable = [line for line in lines if "cannot show it" in line]
    assert len(unreadable) == 2
    assert "experiments/e1/participants/p1" in unreadable[0]
    assert "still here" in lines[-1]
