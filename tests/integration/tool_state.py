"""What the tool tests share: the example workflow with tools added the way a workflow document
holds them (Diskurs' ``tools`` entries naming a project file by path,
``tests/integration/tooling/tools.py``), whose tools log each run to a file, so runs are counted
across processes (the crash test's runtime is one of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conductor_state import load_example
from google.cloud import firestore

TOOLING = Path(__file__).with_name("tooling")
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
WF = "tooling"


def logging_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the tools log their runs to; the tools' folder allowed (DLAB_WORKFLOW_DIRS)."""
    log = tmp_path / "tools.log"
    log.write_text("")
    monkeypatch.setenv("TOOLING_LOG", str(log))
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", str(TOOLING))
    return log


def with_tools(db: firestore.Client, *names: str) -> None:
    """The example as workflow ``tooling``, its answerer given the tools ``names``."""
    load_example(db, WF)
    entries = [
        {"name": n, "functionName": n, "modulePath": str(TOOLING / "tools.py")}
        for n in ("lookup", "explode", "stall")
    ]
    db.document(f"workflows/{WF}").update({"tools": entries})
    db.document(f"workflows/{WF}/agents/answerer").update({"tools": list(names)})


def tool_calls(db: firestore.Client, cid: str, step: str) -> list[dict[str, Any]]:
    """The step's tool calls, as recorded in the conversation's journal."""
    made_by = firestore.FieldFilter("step", "==", f"conversations/{cid}/steps/{step}")
    docs = db.collection(f"conversations/{cid}/journal").where(filter=made_by).get()
    return sorted((d.to_dict() for d in docs), key=lambda d: (d["round"], d["position"]))


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines()
