"""Helpers for the conductor workflow tests: load a workflow, start a conversation, read its
steps and attempts, and a scripted model that is wrong on purpose."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.conductor.documents import Conversation, Status, Step
from shared.llm.base import ModelClient, ModelReply, ModelRequest, Usage
from tools.load_workflow import load

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "workflows" / "example"


def load_example(db: firestore.Client, workflow_id: str = "example") -> str:
    return load(db, EXAMPLE, workflow_id)


def start(db: firestore.Client, cid: str, query: str, workflow_id: str = "example") -> None:
    db.document(f"conversations/{cid}").set(
        {"query": query, "workflowId": workflow_id, "status": "PENDING"}
    )


def conversation(db: firestore.Client, cid: str) -> Conversation:
    return Conversation.model_validate(db.document(f"conversations/{cid}").get().to_dict())


def steps(db: firestore.Client, cid: str) -> list[Step]:
    found = [
        Step.model_validate(s.to_dict()) for s in db.collection(f"conversations/{cid}/steps").get()
    ]
    return sorted(found, key=lambda s: s.index)


def attempts(db: firestore.Client, cid: str, step_id: str) -> list[dict[str, Any]]:
    docs = db.collection(f"conversations/{cid}/steps/{step_id}/attempts").get()
    return sorted((d.to_dict() for d in docs), key=lambda a: a["attempt"])


def errors(db: firestore.Client, cid: str) -> list[dict[str, Any]]:
    return [d.to_dict() for d in db.collection(f"conversations/{cid}/errors").get()]


def finished(db: firestore.Client, *cids: str) -> Callable[[], bool]:
    return lambda: all(
        conversation(db, c).status not in (Status.PENDING, Status.RUNNING) for c in cids
    )


class Scripted:
    """Wraps the model: replies whose prompt contains a marker are replaced (once each, or
    always), so a test can make the model wrong on purpose; others go to the real client."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rules: list[tuple[str, dict[str, Any], int]] = []
        self.prompts: list[ModelRequest] = []

    def reply(self, marker: str, value: dict[str, Any], times: int = 1) -> None:
        self.rules.append((marker, value, times))

    def wrap(self, client: ModelClient) -> ModelClient:
        outer = self

        class Wrapped:
            def generate(self, request: ModelRequest) -> ModelReply:
                with outer.lock:
                    outer.prompts.append(request)
                    for i, (marker, value, times) in enumerate(outer.rules):
                        if marker in request.prompt and times != 0:
                            outer.rules[i] = (marker, value, times - 1)
                            text = json.dumps(value)
                            return ModelReply(text=text, usage=Usage(1, 1), raw=text)
                return client.generate(request)

        return Wrapped()
