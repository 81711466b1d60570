"""Issue 28 row 10 on the real emulators: a deployed workflow edited by hand (the console's raw
document writes) into one the conductor cannot run as written gets one error record naming the
document and field at the conversation's first step, and the conversation is FAILED there,
before any model call. Before, a misspelt ``memoryFields`` was kept in silence and the
conductor dispatched the extractor until its cap (a model call each time); a misspelt rule
target or a broken template of the second agent cost the first agent's calls first."""

from __future__ import annotations

from typing import Any

import pytest
from conductor_state import conversation, finished, load_example, start, steps
from experiment_state import settle
from google.cloud import firestore

from shared.conductor.documents import Status

pytestmark = pytest.mark.usefixtures("clean")

QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"


def _records(db: firestore.Client, workflow_id: str) -> list[dict[str, Any]]:
    """Error records on the workflow's documents (filed under the workflow)."""
    return [d.to_dict() for d in db.collection(f"workflows/{workflow_id}/errors").get()]


def _failed_at_the_first_step(runtime: Any, db: firestore.Client, wf: str) -> dict[str, Any]:
    start(db, wf, QUERY, workflow_id=wf)
    settle(runtime, finished(db, wf), rounds=5)
    conv = conversation(db, wf)
    assert conv.status == Status.FAILED, conv
    assert conv.dispatches == 0
    assert [(s.index, s.status) for s in steps(db, wf)] == [(0, "failed")]  # no model call
    (record,) = _records(db, wf)
    assert conv.error is not None
    assert (conv.error.document, conv.error.field) == (record["document"], record["field"])
    return record


def test_a_misspelt_memory_field_fails_the_first_step(runtime, db):
    load_example(db, "misspelt")
    db.document("workflows/misspelt").update(
        {
            "conductor.memoryField": ["name", "topic", "user_question", "answer"],
            "conductor.memoryFields": firestore.DELETE_FIELD,
        }
    )
    record = _failed_at_the_first_step(runtime, db, "misspelt")
    assert (record["document"], record["field"]) == ("workflows/misspelt", "conductor.memoryField")
    assert "unknown key 'memoryField' (did you mean 'memoryFields'?)" in record["reason"]


def test_a_rule_naming_no_agent_fails_the_first_step(runtime, db):
    load_example(db, "rules")
    rules = db.document("workflows/rules").get().to_dict()["conductor"]["rules"]
    rules[2]["then"] = "answerrer"
    db.document("workflows/rules").update({"conductor.rules": rules})
    record = _failed_at_the_first_step(runtime, db, "rules")
    assert (record["document"], record["field"]) == ("workflows/rules", "conductor.rules[2].then")
    assert "did you mean 'answerer'?" in record["reason"]


def test_a_later_agents_broken_template_fails_the_first_step(runtime, db):
    load_example(db, "broken")
    db.document("workflows/broken/agents/answerer").update({"userPrompt": "{% if answer %}"})
    record = _failed_at_the_first_step(runtime, db, "broken")
    assert (record["document"], record["field"]) == (
        "workflows/broken/agents/answerer",
        "userPrompt",
    )
    assert "template syntax error on line 1" in record["reason"]
