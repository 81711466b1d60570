"""The journal's key and the scripted model's determinism under garbled replies: the pure parts
of "a reply that arrived is recorded once and read by every re-execution"."""

from __future__ import annotations

import dataclasses
import json

from functions import journal
from shared.llm.base import Credentials, Message, ModelRequest, ToolSpec
from shared.llm.scripted import ScriptedModel

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["a", "b", "c", "d", "e", "f"]}},
    "required": ["answer"],
}
BASE = ModelRequest(prompt="Pick one.", response_schema=SCHEMA, model_name="m", seed="p1:s1:move")


def test_the_key_is_the_request_not_the_credentials_or_the_time_left() -> None:
    same = dataclasses.replace(BASE, credentials=Credentials(api_key="k"), timeout_s=3.0)
    assert journal.key(same) == journal.key(BASE)
    assert len(journal.key(BASE)) == 40


def test_anything_the_model_sees_or_the_seed_changes_the_key() -> None:
    changed = [
        dataclasses.replace(BASE, prompt="Pick two."),
        dataclasses.replace(BASE, seed="p2:s1:move"),
        dataclasses.replace(BASE, model_name="other"),
        dataclasses.replace(BASE, system="Be brief."),
        dataclasses.replace(BASE, response_schema={"type": "object"}),
        dataclasses.replace(BASE, generation_config={"temperature": 0.2}),
        dataclasses.replace(BASE, history=(Message("assistant", "x"), Message("user", "again"))),
        dataclasses.replace(BASE, tools=(ToolSpec("t", "a tool", {"type": "object"}),)),
    ]
    keys = {journal.key(r) for r in changed}
    assert len(keys) == len(changed) and journal.key(BASE) not in keys


def _corrected(after: str) -> ModelRequest:
    history = (Message("assistant", after), Message("user", "That was not valid JSON."))
    return dataclasses.replace(BASE, history=history)


def test_a_garbled_reply_does_not_move_the_scripted_answer() -> None:
    """A fault garbled the first reply: the corrective turn gets the answer the calm run's
    first turn got, so a run with faults ends as the calm run."""
    model = ScriptedModel()
    calm = model.generate(BASE).text
    for garbled in ("Sure! Here is my answer:", '{"answer": "a', "[1, 2, 3]"):
        assert model.generate(_corrected(garbled)).text == calm


def test_an_answer_of_its_own_refused_moves_the_scripted_answer_on() -> None:
    """A validator refused the model's own (schema-valid) answer: asked again, it answers
    anew, as before the journal (many seeds, so a coincidence cannot pass it)."""
    model = ScriptedModel()
    moved = 0
    for n in range(20):
        request = dataclasses.replace(BASE, seed=f"p{n}:s1:move")
        first = model.generate(request).text
        again = model.generate(dataclasses.replace(_corrected(first), seed=request.seed)).text
        assert json.loads(again)["answer"] in SCHEMA["properties"]["answer"]["enum"]
        moved += again != first
    assert moved >= 10


def test_a_recorded_reply_comes_back_as_it_arrived() -> None:
    from shared.llm.base import ModelReply, ToolCall, Usage

    call = ToolCall("c1", "lookup", {"city": "Oslo", "n": [1, 2]}, signature="s", malformed="")
    reply = ModelReply(text="", usage=Usage(12, 3), raw="raw", tool_calls=(call,))
    key = journal.key(BASE)
    data = journal.entry(key, BASE, reply, log="runs/r/logs/l", description="d", agent="p1")
    back = journal.RecordedCall.model_validate(data).reply
    assert back == dataclasses.replace(reply, raw=None)  # the raw text stays in the call log
    assert data["key"] == key and data["log"] == "runs/r/logs/l" and data["expireAt"]
