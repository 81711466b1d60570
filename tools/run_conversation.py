"""Run a conductor conversation from the terminal: live progress, then the transcript.

    python -m tools.run_conversation "Hi, I'm Dana; my firewall drops port 443" --local
    python -m tools.run_conversation "..." --workflow example      # against `make up`

``--local`` starts the emulators and the functions in this process (the scripted model unless
a provider is configured, see README), loads ``workflows/<workflow>`` and runs the query; without
it the command writes the conversation into the emulators of ``make up`` (or the project named
by GOOGLE_CLOUD_PROJECT) and follows it there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.conductor.documents import ACTIVE, Conversation, Step
from tools.load_workflow import WorkflowError, load

REPO_ROOT = Path(__file__).resolve().parents[1]


def _line(step: Step) -> str:
    if step.kind == "conductor":
        d = step.decision
        what = f"→ {d.next_agent} ({d.by}{': ' + d.reason if d.reason else ''})" if d else ""
        return f"conductor {what}"
    output = json.dumps(step.output, ensure_ascii=False) if step.output else ""
    final = "  [final: hands back]" if step.is_final else ""
    return f"{step.agent} (turn {step.turn}, step {step.agent_step}) {output}{final}"


def follow(
    db: firestore.Client, conversation_id: str, timeout: float = 300, out: Any = sys.stdout
) -> Conversation:
    """Print each step as it completes until the conversation ends; returns it."""
    shown: set[int] = set()
    t0 = time.monotonic()
    steps = db.collection(f"conversations/{conversation_id}/steps")
    while True:
        for snap in sorted(steps.get(), key=lambda s: s.id):
            step = Step.model_validate(snap.to_dict())
            if step.index in shown or step.status == "pending":
                continue
            shown.add(step.index)
            attempts = len(list(snap.reference.collection("attempts").list_documents()))
            tries = f" ({attempts} attempts)" if attempts > 1 else ""
            error = f"  ✗ {step.error}" if step.error else ""
            print(
                f"[{time.monotonic() - t0:6.1f}s] #{step.index} {_line(step)}{tries}{error}",
                file=out,
            )
        conv = Conversation.model_validate(
            db.document(f"conversations/{conversation_id}").get().to_dict()
        )
        if conv.status not in ACTIVE:
            return conv
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"conversation {conversation_id} still {conv.status}")
        time.sleep(0.2)


def transcript(conv: Conversation, out: Any = sys.stdout) -> None:
    print(f"\nstatus   {conv.status}", file=out)
    if conv.answer:
        print(f"answer   {conv.answer}", file=out)
    if conv.error:
        print(f"error    {conv.error.document} · {conv.error.field}: {conv.error.reason}", file=out)
    print("memory", file=out)
    for name, kept in conv.memory.items():
        print(f"  {name:<14} {kept.value!r}  (set by {kept.agent}, turn {kept.turn})", file=out)


@contextlib.contextmanager
def _local() -> Iterator[firestore.Client]:
    from emulator.config import default_processes
    from emulator.runtime import LocalRuntime
    from shared.llm.providers import MODEL_OVERRIDE_ENV

    os.environ.setdefault(MODEL_OVERRIDE_ENV, "SCRIPTED")
    with LocalRuntime(mode="concurrent", processes=default_processes()) as rt:
        rt.reset()
        yield firestore.Client(project=rt.project)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("query")
    parser.add_argument("--workflow", default="example", help="workflow id (default: example)")
    parser.add_argument("--local", action="store_true", help="start emulators and functions here")
    parser.add_argument("--id", help="conversation id (default: a new one)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT", "demo-dlab"))
    args = parser.parse_args(argv)
    conversation_id = args.id or uuid.uuid4().hex[:12]
    clients = (
        _local() if args.local else contextlib.nullcontext(firestore.Client(project=args.project))
    )
    with clients as db:
        if args.local:
            try:
                load(db, REPO_ROOT / "workflows" / args.workflow, args.workflow)
            except WorkflowError as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
        db.document(f"conversations/{conversation_id}").set(
            {"query": args.query, "workflowId": args.workflow, "status": "PENDING"}
        )
        print(f"conversation  conversations/{conversation_id} ({args.workflow})")
        conv = follow(db, conversation_id, args.timeout)
        transcript(conv)
    return 0 if conv.status == "DONE" else 1


if __name__ == "__main__":
    sys.exit(main())
