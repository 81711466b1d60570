"""``/v1/conversations/{id}``: a conductor conversation as a client sees it (its status, and
the human step it waits for, with the question and the answer's schema), and the person's
answer to that step (beyond Deliberate Lab's API: docs/API.md). The answer is checked as the
step will check it and written as the console writes it (``functions.conductor.human``)."""

from __future__ import annotations

from typing import Any

import flask

from functions import store
from functions.api.http import ApiError, Call, answer
from functions.conductor import human
from functions.conductor.decide import conversation_path

Json = dict[str, Any]


def _conversation(call: Call, *, owner: bool) -> Json:
    """The conversation, if the caller created it (or, to read it, is one of its readers)."""
    found = store.snapshot_data(conversation_path(call.params["id"]))
    if found is None:
        raise ApiError(404, "Conversation not found")
    readers = [] if owner else (found.get("permissions") or {}).get("readers") or []
    if found.get("creator") != call.experimenter and call.experimenter not in readers:
        raise ApiError(403, "Access denied")
    return found


def get_conversation(call: Call) -> flask.Response:
    call.require("read")
    conv = _conversation(call, owner=False)
    step = human.waiting_step(call.params["id"])
    waiting = None
    if step is not None and step.waiting is not None:
        waiting = {"step": step.index, "agent": step.agent, **step.waiting.to_firestore()}
    fields = ("workflowId", "query", "status", "answer", "currentStep", "activeAgent", "error")
    return answer({"id": call.params["id"], **{f: conv.get(f) for f in fields}, "waiting": waiting})


def answer_step(call: Call) -> flask.Response:
    """``POST {"values": {...}}``: the answer to the step the conversation waits for."""
    call.require("write")
    _conversation(call, owner=True)
    values = call.body().get("values")
    if not isinstance(values, dict):
        raise ApiError(400, 'Invalid request body: send {"values": {...}}')
    written = human.submit(call.params["id"], values, by=f"api:{call.experimenter}")
    if isinstance(written, human.Refused):
        raise ApiError(written.status, f"{written.field}: {written.reason}")
    return answer({"answer": written}, 201)
